"""Make a small offline wheel folder for Ray on a machine with no package index.

Downloads ``ray==2.60.0`` and the runtime dependencies a GPU image usually lacks, for one
Python version, and re-packs the Ray wheel without the parts that tasks and actors never
load: ``ray/jars`` (Java workers) and ``ray/dashboard/client/build`` (the dashboard's web
page; ptxds starts Ray with ``include_dashboard=False``). RECORD is rewritten to match.
Install it there with benchmarks/ray_install.sh.

    python benchmarks/ray_wheels.py --out .whl-ray --python-version 3.12
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

RAY = "ray==2.60.0"
# Ray's requirements that a CUDA/PyTorch image does not ship (click, filelock, msgpack,
# packaging, protobuf, pyyaml, requests and attrs it does).
MISSING_DEPS = ["jsonschema==4.26.0", "jsonschema-specifications==2025.9.1", "referencing==0.37.0",
                "rpds-py==2026.9.1"]
DROPPED = ("ray/jars/", "ray/dashboard/client/build/")


def download(specs: list, dest: Path, python_version: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--platform", "manylinux2014_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_28_x86_64",
                    "-d", str(dest), *specs], check=True)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def slim(wheel: Path, out: Path) -> Path:
    """A copy of ``wheel`` without DROPPED, its RECORD rewritten, at maximum compression."""
    target = out / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED,
                                                        compresslevel=9) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for info in src.infolist():
            if info.filename.startswith(DROPPED) or info.filename == record_name:
                continue
            data = src.read(info)
            dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            lines.append(f"{info.filename},{_record_hash(data)},{len(data)}")
        lines.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(lines) + "\n")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--python-version", default="3.12")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        download([RAY], Path(tmp), args.python_version)
        slim(next(Path(tmp).glob("ray-*.whl")), args.out)
    download(MISSING_DEPS, args.out, args.python_version)
    total = sum(p.stat().st_size for p in args.out.iterdir())
    for path in sorted(args.out.iterdir()):
        print(f"{path.stat().st_size / 2**20:8.1f} MiB  {path.name}")
    print(f"{total / 2**20:8.1f} MiB  total")


if __name__ == "__main__":
    main()
