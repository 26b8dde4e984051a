"""Inside the oracle, scorer mode: the signer thread (docs/design/runner.md, "Unforgeable results").

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._boot import SECRET_KEY_BYTES


def _signer(secret_fd, end_fd, channel_fd, ready, canaries_out, main_ident, main_code, top_code):
    """The signer thread. Reads the run's secret, then waits for the runner's end request;
    authenticates the runner's rows and ends the process with the run's exit status.

    Everything it uses is bound to a local before the tree is importable, so replacing a
    module attribute later changes nothing here. The key and the exit status exist only in
    this frame, which is the outermost frame of its thread: no signal handler runs here
    (they run on the main thread), and the audit hook refuses every way to reach another
    thread's frame (sys._current_frames, gc, tracing, ctypes) to everyone but this frame.
    """
    import _hashlib
    import _json
    import math
    import types

    read, write, close, exit_now = os.read, os.write, os.close, os._exit
    frames_of = sys._current_frames
    digest = _hashlib.hmac_digest
    quote = _json.encode_basestring_ascii
    frame_type, type_, sorted_, finite = types.FrameType, type, sorted, math.isfinite
    str_, int_, float_, bool_, list_, tuple_, dict_ = str, int, float, bool, list, tuple, dict
    int_repr, float_repr, hexlify, encode = int.__repr__, float.__repr__, bytes.hex, str.encode
    join_text, join_bytes, items, get = str.join, bytes.join, dict.items, dict.get
    enumerate_, len_, os_error, suppress = enumerate, len, OSError, contextlib.suppress
    any_error = BaseException

    def say(text):
        """An unauthenticated line on the channel: the host treats the run as forged."""
        with suppress(os_error):
            write(channel_fd, b"signer: " + text + b"\n")

    def canon(value):
        """JSON text of the runner's rows using only functions bound above."""
        kind = type_(value)
        if kind is str_:
            return quote(value)
        if kind is bool_:
            return "true" if value else "false"
        if kind is int_:
            return int_repr(value)
        if kind is float_:
            return float_repr(value) if finite(value) else "0.0"
        if value is None:
            return "null"
        if kind is list_ or kind is tuple_:
            return "[" + join_text(",", [canon(v) for v in value]) + "]"
        if kind is dict_:
            pairs = [(k, v) for k, v in items(value) if type_(k) is str_]
            body = [quote(k) + ":" + canon(v) for k, v in sorted_(pairs)]
            return "{" + join_text(",", body) + "}"
        return quote("<unserializable>")

    try:
        raw = b""
        while chunk := read(secret_fd, 4096):
            raw += chunk
        close(secret_fd)
        key = raw[:SECRET_KEY_BYTES]
        spec = json.loads(raw[SECRET_KEY_BYTES + 1 :])
        exit_status = int_(spec["exit"])
        canaries_out.extend(tuple_(c) for c in spec["canaries"])
        del raw, spec
    except Exception:
        say(b"the run's secret could not be read")
        return
    finally:
        ready.release()

    def line(body):
        data = encode(canon(body), "ascii")
        return encode(hexlify(digest(key, data, "sha256")), "ascii") + b" " + data + b"\n"

    noticed = set()  # say each kind of trouble once, however often it happens

    def once(text):
        if text not in noticed:
            noticed.add(text)
            say(text)

    try:
        while True:
            request = read(end_fd, 1)
            if request == b"":
                say(b"the end request pipe closed before the runner asked")
                return
            if request != b"G":
                once(b"unexpected byte on the end request pipe")
                continue
            top: Any = get(frames_of(), main_ident)
            if (
                type_(top) is not frame_type
                or top.f_code is not main_code
                or top.f_back is None
                or top.f_back.f_code is not top_code
                or top.f_back.f_back is not None
            ):
                once(b"the end was requested while the runner was not at its end")
                continue
            payload: Any = get(top.f_locals, "payload")
            break
        rows: Any = get(payload, "rows") if type_(payload) is dict_ else None
        end: Any = get(payload, "end") if type_(payload) is dict_ else None
        if type_(rows) is not list_ or type_(end) is not dict_:
            say(b"the runner's rows are malformed")
            return
        lines = [line({"seq": seq, "row": row}) for seq, row in enumerate_(rows)]
        end_body = dict_(end)
        end_body["rows"] = len_(lines)
        lines.append(line({"seq": len_(lines), "end": end_body}))
        data = join_bytes(b"", lines)
        while data:
            data = data[write(channel_fd, data) :]
    except any_error:
        say(b"failed while signing")
        return
    exit_now(exit_status)
