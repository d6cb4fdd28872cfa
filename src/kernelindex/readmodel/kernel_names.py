"""Kernel names for people (issue 43 item 7). aiter's tables name a Composable Kernel (CK) instance by every
template argument its generator fills in — ``a8w8_blockscale_1x128x128_256x16x64x256_16x16_16x16_1x1_16x16x1_
16x16x1_1x16x1x16_4_1x1_intrawave_v1`` — and an assembly kernel by its mangled symbol. Where such a name is a
title or a row's name, a person reads what tells the kernels of one operation apart: the instance family, its
block tile M×N×K and its pipeline (scheduler and version; a CK-tile instance's blocks per CU). The full name stays
the implementation's title in JSON, on its run page and in its callable.

The fields are those of aiter's instance generators (``kernelInstance.name``, ``TileKernelInstance.name``):
XDL ``{kind}_[{scale block}_]{threads}x{M}x{N}x{K}_…_{scheduler}_v{version}``; CK-tile
``{kind}_cktile_{M}x{N}x{K}_{warps}_{warp tile}_{scheduler}_{flags}_{blocks per CU}[_aqrm]`` (the B-preshuffle
tables put ten flags first and the scheduler last); two-stage MoE ``moe_ck2stages_gemm{stage}_{threads}x{M}x{N}x
{K}_{waves}_{epilogue}_v{version}_…``; assembly ``_ZN5aiter{length}{name}E``."""

from __future__ import annotations

import re

_XDL = re.compile(r"(?P<kind>[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*?)_(?:\d+x\d+x\d+_)?"
                  r"\d+x(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_(?:[0-9x]+_)*(?P<sched>intrawave|interwave)_v(?P<v>\d+)")
_TILE = re.compile(r"(?P<kind>[a-z0-9_]+?)_cktile_(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_\d+x\d+x\d+_\d+x\d+x\d+_"
                   r"(?P<sched>[a-z]+)_[01]x[01]x[01]_(?P<bpc>\d+)(?P<aq>_aqrm)?")
_TILE_PRESHUFFLE = re.compile(r"(?P<kind>[a-z0-9_]+?)_cktile_[0-9x]+_(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_\d+x\d+x\d+_"
                              r"\d+x\d+x\d+_(?P<sched>[a-z]+)")
_MOE = re.compile(r"moe_ck2stages_gemm(?P<stage>\d)_\d+x(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)_\d+x\d+_"
                  r"(?P<epilogue>[A-Za-z0-9]+)_v(?P<v>\d+)_\w*")
_ASM = re.compile(r"_ZN5aiter\d+(?P<name>\w+?)E")


def _tile(m: re.Match[str]) -> str:
    return f"{m['m']}×{m['n']}×{m['k']}"


def short_kernel(name: str) -> str:
    """One kernel's name for people; a name of no form above is returned as it is."""
    if m := _XDL.fullmatch(name):
        return f"{m['kind']} {_tile(m)} {m['sched']} v{m['v']}"
    if m := _TILE.fullmatch(name):
        per_cu = f"{m['bpc']} block{'s' if m['bpc'] != '1' else ''}/CU"
        return f"{m['kind']} ck-tile {_tile(m)} {m['sched']} {per_cu}" + (" row-major scales" if m["aq"] else "")
    if m := _TILE_PRESHUFFLE.fullmatch(name):
        return f"{m['kind']} ck-tile {_tile(m)} {m['sched']}"
    if m := _MOE.fullmatch(name):
        return f"moe gemm{m['stage']} {_tile(m)} {m['epilogue']} v{m['v']}"
    if m := _ASM.fullmatch(name):
        return m["name"]
    return name


def short_title(title: str) -> str:
    """A title with each kernel name in it shortened (aiter's are ``aiter {entry} · {library} · {kernel}``, a
    two-stage MoE's kernel ``{stage 1} + {stage 2}``); any other title is returned as it is."""
    if "_" not in title:
        return title  # no generated name in it (most titles: "Liger", "torch.compile")
    return " · ".join(" + ".join(short_kernel(k) for k in part.split(" + ")) for part in title.split(" · "))
