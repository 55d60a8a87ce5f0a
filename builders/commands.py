"""The hook through which a source brings its own ``ptxds`` commands (the tvm source's
``tune-tvm``).

A builder class lists them in ``commands``: "module:function" paths, each function taking a
``CommandHost`` and returning a click command or group, which the CLI adds beside its own.
Builders sit below the CLI (docs/contracts.md), so a source's command cannot import the
build pipeline or the verifier: the CLI lends them through the host, which also carries
the CLI's shared decorators, so a source's commands read and fail like the built-in ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class CommandHost:
    """What ``ptxds`` lends a source's commands.

    - ``build(source, out_dir, options: BuildOptions, jobs=0, progress=True) -> BuildSummary``:
      ``ptxds build`` as a call (resumable; the folder published once at its end).
    - ``verify(in_dir, out_dir, progress=True, **settings) -> VerifySummary``: ``ptxds
      verify`` on this machine's GPUs, ``settings`` being ``verify.VerifyOptions`` fields;
      the output published once at its end.
    - ``require_gpu()``: raises the one-line error of a machine without a usable GPU.
    - ``errors``: decorator turning the library's errors into one-line ``Error:`` messages.
    - ``silent_option``: decorator adding ``--silent`` (the command gets ``silent``).
    - ``parse_archs("sm_80,sm_90a") -> [archs]`` (a usage error names the known ones).
    - ``print_build_summary(summary)``: the lines ``ptxds build`` prints at its end.
    """
    build: Callable
    verify: Callable
    require_gpu: Callable
    errors: Callable
    silent_option: Callable
    parse_archs: Callable
    print_build_summary: Callable
