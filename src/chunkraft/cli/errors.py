"""The exceptions of the ``chunkraft`` admin tools: a failed command, never a traceback.

::

    ToolError                 a command that cannot be carried out (exit 1, one line)
    ├── InputFileError        a file the command was told to read cannot be used
    └── KafkaRefusal          a request the tool refuses itself, naming the Kafka error the
                              controller would answer (INVALID_REPLICA_ASSIGNMENT, ...)

:func:`chunkraft.cli.output.run_tool` prints each as ``Error while executing <word> command :
<text>``. A leaf module (nothing of the CLI imported), so that :mod:`.output`,
:mod:`.input_files` and every tool can import it without an import circle.
"""

from __future__ import annotations

__all__ = ["InputFileError", "KafkaRefusal", "ToolError"]


class ToolError(Exception):
    """A command that cannot be carried out; its text is the message the user sees."""


class InputFileError(ToolError):
    """A file a command was told to read cannot be used; the text names the file and why
    (missing, a directory, too large, not UTF-8, binary, not JSON, nested too deeply, ...)."""


class KafkaRefusal(ToolError):
    """A request the tool refuses before sending it, because a controller would refuse it too.

    ``error_name`` is the Kafka error the controller would answer; the text is ``NAME:
    message``, exactly as a controller's refusal is printed (``AdminError.describe``), so an
    operator or a script sees the same line whichever side refused.
    """

    def __init__(self, error_name: str, message: str) -> None:
        self.error_name = error_name
        self.message = message
        super().__init__(f"{error_name}: {message}")
