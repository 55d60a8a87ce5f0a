"""CPU tests of how the verifier turns a recorded tensormap patch into a driver encode call
(``verify.device.driver.tensor_map_encode_call``): tiled records go to ``cuTensorMapEncodeTiled``,
im2col records (3.x convolutions) to ``cuTensorMapEncodeIm2col``, every argument in the
place the binding's signature names it; and how ``Patch`` validates im2col records."""
from __future__ import annotations

import re

import pytest

cu = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")

from dataset_spec.model import Patch, SpecError  # noqa: E402
from verify.device.driver import tensor_map_encode_call  # noqa: E402

# As the packer records them for a 3.x fprop (x: 2 x 14 x 14 x 64 f16) and its filter.
IM2COL = {"data_type": 1, "rank": 4, "global_dim": [64, 14, 14, 2], "global_strides": [128, 1792, 25088],
          "encode": "im2col", "pixel_box_lower_corner": [-1, -1], "pixel_box_upper_corner": [-1, -1],
          "channels_per_pixel": 32, "pixels_per_column": 128, "element_strides": [1, 1, 1, 1],
          "interleave": 0, "swizzle": 2, "l2_promotion": 0, "oob_fill": 0}
TILED = {"data_type": 1, "rank": 4, "global_dim": [64, 64, 3, 3], "global_strides": [1152, 128, 384],
         "box_dim": [32, 128, 1, 1], "element_strides": [1, 1, 1, 1], "interleave": 0, "swizzle": 2,
         "l2_promotion": 2, "oob_fill": 0}


def _by_name(name: str, args: tuple) -> dict:
    """The call's arguments keyed by the binding's own parameter names (its docstring's signature)."""
    signature = getattr(cu, name).__doc__.splitlines()[0]
    names = re.findall(r"(\w+)(?::[^,]*(?:\[[^\]]*\][^,]*)*)?(?:,|\)$)", signature[signature.index("(") + 1:])
    assert len(names) == len(args), (names, args)
    return dict(zip(names, args))


def _ints(values) -> list:
    return [int(v) for v in values]


def test_im2col_record_is_encoded_by_cuTensorMapEncodeIm2col_with_each_argument_in_place():
    name, args = tensor_map_encode_call(IM2COL, 0x7A0000010000)
    assert name == "cuTensorMapEncodeIm2col"
    a = _by_name(name, args)
    assert int(a["tensorDataType"]) == 1 and a["tensorRank"] == 4 and a["globalAddress"] == 0x7A0000010000
    assert _ints(a["globalDim"]) == [64, 14, 14, 2] and _ints(a["globalStrides"]) == [128, 1792, 25088]
    assert a["pixelBoxLowerCorner"] == [-1, -1] and a["pixelBoxUpperCorner"] == [-1, -1]
    assert (a["channelsPerPixel"], a["pixelsPerColumn"]) == (32, 128)
    assert _ints(a["elementStrides"]) == [1, 1, 1, 1]
    assert a["swizzle"] == cu.CUtensorMapSwizzle(2) and a["l2Promotion"] == cu.CUtensorMapL2promotion(0)
    assert a["interleave"] == cu.CUtensorMapInterleave(0) and a["oobFill"] == cu.CUtensorMapFloatOOBfill(0)


def test_tiled_record_without_encode_key_is_still_cuTensorMapEncodeTiled():
    name, args = tensor_map_encode_call(TILED, 0x1000)
    assert name == "cuTensorMapEncodeTiled"
    a = _by_name(name, args)
    assert _ints(a["boxDim"]) == [32, 128, 1, 1] and a["l2Promotion"] == cu.CUtensorMapL2promotion(2)
    assert tensor_map_encode_call(dict(TILED, encode="tiled"), 0x1000)[0] == "cuTensorMapEncodeTiled"
    with pytest.raises(ValueError, match="neither 'tiled' nor 'im2col'"):
        tensor_map_encode_call(dict(TILED, encode="gather4"), 0x1000)


def test_patch_accepts_im2col_records_and_names_what_a_bad_one_lacks():
    patch = Patch(64, "x", kind="tensormap", tensormap=IM2COL)
    assert patch.tensormap["encode"] == "im2col" and patch.size == 128
    Patch(128, "w", kind="tensormap", tensormap=TILED)  # tiled records keep their keys
    bad = [(dict(IM2COL, pixel_box_lower_corner=[0]), "pixel_box_lower_corner must list 2 ints"),
           ({k: v for k, v in IM2COL.items() if k != "channels_per_pixel"}, "lacks \\['channels_per_pixel'\\]"),
           (dict(IM2COL, rank=2, global_dim=[64, 2], global_strides=[128], element_strides=[1, 1],
                 pixel_box_lower_corner=[], pixel_box_upper_corner=[]), "rank must be 3..5"),
           (dict(IM2COL, encode="im2col_wide"), "encode must be one of")]
    for tensormap, message in bad:
        with pytest.raises(SpecError, match=message):
            Patch(64, "x", kind="tensormap", tensormap=tensormap)
