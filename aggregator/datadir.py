"""The data directory's checks, now the service kit's (:mod:`deniable.service.datadir`).

Kept only until the aggregator's storage imports them from the kit; nothing else should.
"""

from deniable.service.datadir import check_private_file, open_lock_file, private_directory

__all__ = ["check_private_file", "open_lock_file", "private_directory"]
