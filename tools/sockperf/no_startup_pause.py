"""Debian's sockperf 3.7 client without its fixed 2 s start-up pause, everything else the same.

sockperf 3.7's client (every `Client<...>::initBeforeLoop()`, one per template instantiation)
runs `sleep(pre_warmup_wait); m_ioHandler.warmup(msg); sleep(2);` before its test starts. The
warm-up only sends to multicast sockets, and no option skips the `sleep(2)`: every client run
idles 2 s. This patch removes that call and nothing else, in Debian's own binary (package
sockperf 3.7-1, the one the study measured with): each site is
`call IoHandler::warmup; mov $2,%edi; call sleep@plt`, and its `call sleep@plt` becomes a
five-byte no-op. The server, the pre-warm-up wait (`--pre-warmup-wait`, 0 s by default), the
warm-up, the timing and the output are untouched.

Usage: python3 no_startup_pause.py INPUT OUTPUT (INPUT: Debian's /usr/bin/sockperf). Both the
input and the result are checked against their sha256, so the result is the same file on
every machine; any other input is refused with what to install.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from pathlib import Path

DEBIAN_SHA256 = "3f6a5e70b65b8e462e87708058ad7b36a2f86b58ed17ff78e1ad49f73e01288b"
PATCHED_SHA256 = "4a37de54d744c39017b8a1f68606c70ca8e1f182d9946fee8b1e9d4fb40578b9"
# File offsets in that binary (its code segment is mapped at offset == address)
SLEEP_PLT = 0xCF290  # sleep@plt
WARMUP = 0x38FC40  # IoHandler::warmup(Message*) const
SITES = 360  # Client<IoHandler, switches...>::initBeforeLoop instantiations
CALL, MOV_EDI_2 = b"\xe8", b"\xbf\x02\x00\x00\x00"
NOP5 = b"\x0f\x1f\x44\x00\x00"  # nopl 0x0(%rax,%rax,1)


def _calls(code: bytes, at: int, target: int) -> bool:
    """Whether the five bytes at ``at`` are a relative call to ``target``."""
    if code[at : at + 1] != CALL:
        return False
    (rel,) = struct.unpack_from("<i", code, at + 1)
    return at + 5 + rel == target


def sites(code: bytes) -> list[int]:
    """Offsets of the `call sleep@plt` that follow `call IoHandler::warmup; mov $2,%edi`."""
    found, at = [], code.find(MOV_EDI_2)
    while at != -1:
        if _calls(code, at - 5, WARMUP) and _calls(code, at + 5, SLEEP_PLT):
            found.append(at + 5)
        at = code.find(MOV_EDI_2, at + 1)
    return found


def patch(code: bytes) -> bytes:
    if hashlib.sha256(code).hexdigest() != DEBIAN_SHA256:
        raise SystemExit(
            "sockperf: the input is not Debian's sockperf 3.7-1 binary (sha256 "
            f"{DEBIAN_SHA256[:16]}...): apt-get install sockperf=3.7-1"
        )
    at = sites(code)
    if len(at) != SITES:
        raise SystemExit(f"sockperf: found {len(at)} start-up pauses, expected {SITES}")
    out = bytearray(code)
    for offset in at:
        out[offset : offset + 5] = NOP5
    return bytes(out)


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[2])
    patched = patch(Path(argv[1]).read_bytes())
    digest = hashlib.sha256(patched).hexdigest()
    if digest != PATCHED_SHA256:
        raise SystemExit(f"sockperf: the patched binary's sha256 is {digest}, not {PATCHED_SHA256}")
    output = Path(argv[2])
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    partial.write_bytes(patched)
    partial.chmod(0o755)
    os.replace(partial, output)


if __name__ == "__main__":
    main(sys.argv)
