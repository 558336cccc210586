"""Write a one-layer OCI image archive from host files, for `ctr -n k8s.io images import`.

containerd imports an archive, not a bare rootfs (what `docker import` takes), and no registry
is reachable here: this builds the archive itself, standard library only. The layer is an
uncompressed tar with fixed owners and times, so the same files give the same digests.

Usage: python3 oci_image.py NAME OUTPUT.tar --add SRC=DEST [--add ...] [--link DEST=TARGET ...]
       [--text DEST=CONTENT ...] --entrypoint ARG [--entrypoint ARG ...] [--cmd ARG ...]
NAME is the full reference containerd stores (e.g. registry.k8s.io/pause:3.10).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def _info(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, link
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def layer_tar(files: dict[str, bytes | str], modes: dict[str, int]) -> bytes:
    """A tar of ``files`` (DEST -> content, or str: symlink target), parents included."""
    dirs = sorted({str(p) for d in files for p in Path(d.lstrip("/")).parents if str(p) != "."})
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            tar.addfile(_info(d, tarfile.DIRTYPE, 0o755))
        for dest in sorted(files):
            name, content = dest.lstrip("/"), files[dest]
            if isinstance(content, str):
                tar.addfile(_info(name, tarfile.SYMTYPE, 0o777, link=content))
            else:
                info = _info(name, tarfile.REGTYPE, modes.get(dest, 0o644), len(content))
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes, media_type: str) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    info = _info(f"blobs/sha256/{digest}", tarfile.REGTYPE, 0o644, len(data))
    tar.addfile(info, io.BytesIO(data))
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def write_archive(
    name: str, output: Path, layer: bytes, entrypoint: list[str], cmd: list[str]
) -> str:
    """Write the OCI archive; returns the manifest digest."""
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": entrypoint,
            "Cmd": cmd or None,
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer).hexdigest()}"]},
    }
    tmp = output.with_name(output.name + ".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        tar.addfile(_info("oci-layout", tarfile.REGTYPE, 0o644, len(layout)), io.BytesIO(layout))
        layer_desc = _blob(tar, layer, LAYER)
        config_desc = _blob(tar, json.dumps(config, sort_keys=True).encode(), CONFIG)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config_desc,
                    "layers": [layer_desc]}  # fmt: skip
        manifest_desc = _blob(tar, json.dumps(manifest, sort_keys=True).encode(), MANIFEST)
        tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
        manifest_desc["annotations"] = {
            "io.containerd.image.name": name,
            "org.opencontainers.image.ref.name": tag,
        }
        index = json.dumps({"schemaVersion": 2, "manifests": [manifest_desc]}).encode()
        tar.addfile(_info("index.json", tarfile.REGTYPE, 0o644, len(index)), io.BytesIO(index))
    os.replace(tmp, output)
    return manifest_desc["digest"]


def _pairs(values: list[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        left, sep, right = value.partition("=")
        if not sep or not left or not right:
            sys.exit(f"oci_image.py: {option} takes A=B, not {value!r}")
        pairs.append((left, right))
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("output", type=Path)
    parser.add_argument("--add", action="append", default=[], metavar="SRC=DEST")
    parser.add_argument("--link", action="append", default=[], metavar="DEST=TARGET")
    parser.add_argument("--text", action="append", default=[], metavar="DEST=CONTENT")
    parser.add_argument("--entrypoint", action="append", required=True)
    parser.add_argument("--cmd", action="append", default=[])
    args = parser.parse_args(argv)
    files: dict[str, bytes | str] = {}
    modes: dict[str, int] = {}
    for src, dest in _pairs(args.add, "--add"):
        files[dest] = Path(src).read_bytes()
        modes[dest] = Path(src).stat().st_mode & 0o7777
    for dest, target in _pairs(args.link, "--link"):
        files[dest] = target
    for dest, content in _pairs(args.text, "--text"):
        files[dest] = (content + "\n").encode()
    digest = write_archive(args.name, args.output, layer_tar(files, modes), args.entrypoint,
                           args.cmd)  # fmt: skip
    print(f"image {args.name} {digest} {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
