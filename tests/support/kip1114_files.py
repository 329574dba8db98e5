"""KIP-1114's "Example create chunk json file" and "Example alter chunk assignment json file",
character for character, for the tests of the file readers and of the installed command."""

from __future__ import annotations

__all__ = ["KIP_ALTER", "KIP_CREATE"]

KIP_CREATE = """{
"partitions": [{
"topic": "topic1",
"partition": 0,
"replicas": [1, 2, 3]
}, {
"topic": "topic2",
"partition": 2,
"replicas": [2, 9, 12]
}]
}
"""
KIP_ALTER = """{
"chunks": [{
"topic": "topic1",
"partition": 0,
"startOffset": 289818,
"replicas": [4, 5, 6]
}, {
"topic": "topic1",
"partition": 0,
"startOffset": 27784,
"replicas": [1, 2, 3]
}]
}
"""
