"""Inside the oracle: the program's last part, run at top level (it must be: the signer checks
that ``main()`` was called from the program's own top-level code).

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._audit import _arm, _interpreter_dirs, _undumpable
    from ._boot import (
        CHANNEL_FD,
        LAYOUT,
        MODE,
        OPTS,
        SIGNER_START_S,
        SPEC_ROOT,
        TARGETS,
        TREE,
        _tree_paths,
    )
    from ._proxy import install_proxies
    from ._session import main
    from ._signer import _signer


STDLIB_BEFORE = {
    name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
}
CANARIES = []
if MODE == "scorer":
    # Before anything of the tree is importable: the signer takes the secret, the process
    # becomes non-dumpable, the audit hook goes in.
    _undumpable()
    # asyncio.run installs its own SIGINT handler only over Python's default one; nobody
    # interrupts a scorer run from a keyboard.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _END_FROM_SIGNER, _END_REQUEST = os.pipe()
    _PARK, _PARK_WRITE = os.pipe()
    _ready = _thread.allocate_lock()
    _ready.acquire()
    _canaries: list[Any] = []
    _SIGNER = _thread.start_new_thread(
        _signer,
        (
            int(OPTS["secret-fd"]),
            _END_FROM_SIGNER,
            CHANNEL_FD,
            _ready,
            _canaries,
            _thread.get_ident(),
            main.__code__,
            sys._getframe().f_code,
        ),
    )
    if not _ready.acquire(timeout=SIGNER_START_S):
        os._exit(1)
    CANARIES = [tuple(c) for c in _canaries]
    del _ready, _canaries
    _arm(CHANNEL_FD, _SIGNER, _signer.__code__, _interpreter_dirs())
if MODE == "scorer" and "product-fds" in OPTS:
    # Isolated: the product's modules are proxies to the product process, never imported here.
    install_proxies(OPTS, TREE, SPEC_ROOT, LAYOUT, TARGETS)
# The project's code comes from the tree, ahead of anything the interpreter has installed.
sys.path[0:0] = _tree_paths()
main()
