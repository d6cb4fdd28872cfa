"""Issue 43 item 7: a CK instance name (and an aiter assembly symbol) reads, for people, as what tells the kernels
of one operation apart: the family, the block tile M×N×K and the pipeline. Names are aiter's own (shipped tables)."""

from __future__ import annotations

import pytest

from kernelindex.readmodel.kernel_names import short_kernel, short_title

HIPBLASLT = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x64x64"
XDL = "a8w8_blockscale_1x128x128_256x16x64x256_16x16_16x16_1x1_16x16x1_16x16x1_1x16x1x16_4_1x1_intrawave_v1"


@pytest.mark.parametrize(("name", "short"), [
    (XDL, "a8w8_blockscale 16×64×256 intrawave v1"),  # the scale block (1x128x128) and 256 threads are left out
    ("a8w8_rowwise_256x16x64x512_16x16_1x1_32x8x1_32x8x1_1x16x1x16_4x4x1_1x1_intrawave_v3",
     "a8w8_rowwise 16×64×512 intrawave v3"),
    ("bf16_batched_64x16x16x64_16x16_1x1_8x8x1_8x8x1_1x16x1x4_4x4x1_1x1_interwave_v2",
     "bf16_batched 16×16×64 interwave v2"),
    ("a8w8_blockscale_cktile_192x256x128_4x2x1_16x16x128_intrawave_0x1x0_1",
     "a8w8_blockscale ck-tile 192×256×128 intrawave 1 block/CU"),
    ("a8w8_blockscale_cktile_192x256x128_4x2x1_16x16x128_intrawave_0x1x0_2_aqrm",
     "a8w8_blockscale ck-tile 192×256×128 intrawave 2 blocks/CU row-major scales"),
    ("a8w8_bpreshuffle_cktile_0x0x8x4x1x0x0x0x0x1_256x256x128_1x4x1_16x16x128_default",
     "a8w8_bpreshuffle ck-tile 256×256×128 default"),
    ("moe_ck2stages_gemm2_256x32x64x128_1x4_MulABScaleExpertWeight_v1_Nswizzle0_Quant2_MulRoutedWeight0_F8_F8_B16",
     "moe gemm2 32×64×128 MulABScaleExpertWeight v1"),
    ("_ZN5aiter41f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128E", "f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128"),
    (HIPBLASLT, HIPBLASLT),  # not a CK name: left as it is
])
def test_each_form_aiter_writes_is_shortened_and_others_are_left_alone(name: str, short: str) -> None:
    assert short_kernel(name) == short


def test_a_title_shortens_each_kernel_it_names() -> None:
    assert short_title(f"aiter gemm_a8w8_blockscale · ck · {XDL}") == (
        "aiter gemm_a8w8_blockscale · ck · a8w8_blockscale 16×64×256 intrawave v1")
    moe = ("aiter fused_moe · asm+ck · _ZN5aiter56fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_32x64_4tg_pf3E + "
           "moe_ck2stages_gemm2_256x32x64x128_1x4_MulABScaleExpertWeight_v1_Nswizzle0_Quant2_MulRoutedWeight0_F8_F8_B16")
    assert short_title(moe) == ("aiter fused_moe · asm+ck · fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_32x64_4tg_pf3 + "
                                "moe gemm2 32×64×128 MulABScaleExpertWeight v1")
    for title in ("Liger", "torch.compile (max-autotune)", "PyTorch nn.LayerNorm"):
        assert short_title(title) == title
