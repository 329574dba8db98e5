"""Topic and broker configurations: the keys chunkraft knows (:mod:`.keys`), where a value comes
from (:mod:`.resolve`). The values themselves are metadata (ConfigRecord, the image's
:class:`~chunkraft.controller.image.configs.ConfigsImage`)."""
