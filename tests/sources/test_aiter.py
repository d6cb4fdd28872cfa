"""The aiter importer on fixture rows of each family and table format (with and without ``gfx``):
what each row becomes, which GPU label it proves, the tuner's statistic, and every skip's reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.domain.manifests import digest_of, parse_manifest
from kernelindex.policy.floor import floor_estimate
from kernelindex.sources.aiter import import_aiter
from kernelindex.sources.aiter.archive import ArchiveError, TableFile, checked, pack, provenance_of, unpack
from kernelindex.sources.aiter.normalize import implementation_slug

GEMM_A = "gfx,cu_num,M,N,K,libtype,kernelId,splitK,us,kernelName,tflops,bw,errRatio\n"
BF16 = ("gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,kernelName,err_ratio,"
        "tflops,bw\n")
ROWWISE = "gfx,cu_num,M,N,K,q_dtype_w,kernelId,splitK,us,kernelName,tflops,bw,errRatio\n"
A4W4 = "gfx,cu_num,M,N,K,kernelId,splitK,us,kernelName,tflops,bw,errRatio\n"
BATCHED = "gfx,cu_num,B,M,N,K,kernelId,splitK,us,kernelName,tflops,bw,errRatio\n"
MOE_OLD = ("cu_num,token,model_dim,inter_dim,expert,topk,act_type,dtype,q_dtype_a,q_dtype_w,q_type,use_g1u1,"
           "doweight_stage1,block_m,ksplit,us1,kernelName1,err1,us2,kernelName2,err2,us,run_1stage,tflops,bw,_tag\n")
MOE_NEW = ("gfx,cu_num,token,model_dim,inter_dim,expert,topk,act_type,dtype,q_dtype_a,q_dtype_w,q_type,use_g1u1,"
           "doweight_stage1,block_m,ksplit,us1,kernelName1,err1,us2,kernelName2,err2,us,run_1stage,xbf16,flat,"
           "tflops,bw,_tag\n")
GDN = ("gfx,cu_num,dtype,K,V,BT,H,Hg,is_varlen,use_h0,store_fs,snapshot_bf16,state_bf16,T_flat,N,total_chunks,"
       "max_seq_chunks,BV,us\n")

TABLES = {
    "configs/a8w8_blockscale_tuned_gemm.csv": GEMM_A
    + "gfx942,304,1,4096,4096,ck,8,0,6.6154,a8w8_blockscale_1x128x128_256x16,1.43,714.43,0.0\n"
    + "gfx950,256,16,4096,4096,cktile,12,0,9.9757,a8w8_blockscale_cktile_16x128x256,0.01,6.98,0.0\n"
    + "gfx1250,96,16,4096,4096,ck,8,0,9.0,a8w8_blockscale_1x128x128_256x16,1.0,1.0,0.0\n"
    + "gfx942,304,32,4096,4096,ck,8,0,0,a8w8_blockscale_1x128x128_256x16,1.0,1.0,0.0\n",
    "configs/bf16_tuned_gemm.csv": BF16
    + "gfx942,304,128,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,hipblaslt,5,0,20.5,Cijk_Alik,0.0,1,1\n"
    + "gfx950,256,64,256,5120,False,torch.bfloat16,torch.float32,False,False,asm,5,13,7.9191,"
      "_ZN5aiter39bf16gemm_fp32bf16_tn_64x64_splitk_cleanE,0.0,21.19,417.92\n"
    + "gfx950,256,64,256,5120,True,torch.bfloat16,torch.bfloat16,False,False,triton,0,0,7.1,auto,0.0,1,1\n"
    + "gfx950,256,64,256,5120,False,torch.bfloat16,torch.bfloat16,True,False,triton,0,0,7.1,auto,0.0,1,1\n",
    "configs/a8w8_tuned_gemm.csv": ROWWISE
    + "gfx942,80,1,1280,8192,torch.int8,34,0,20.5611,a8w8_rowwise_256x16x64x512,1.02,510.5,0.0\n",
    "configs/a4w4_blockscale_tuned_gemm.csv": A4W4
    + "gfx950,256,1,512,4096,21,0,5.4049,_ZN5aiter41f4gemm_bf16_per1x32Fp4_BpreShuffle_32x128E,0.78,194.57,0.0\n",
    "configs/bf16_tuned_batched_gemm.csv": BATCHED
    + "gfx942,304,16,1,1280,8192,78,0,111.9323,bf16_batched_64x16x16x64,3.0,3000.45,0.0\n",
    "configs/a8w8_tuned_batched_gemm.csv": BATCHED
    + "gfx942,304,16,32,1280,8192,28,0,68.9821,a8w8_batched_rowwise_256x32,155.6,5004.8,0.0\n",
    "configs/tuned_fmoe.csv": MOE_OLD
    + "80,4,2304,1536,8,2,ActivationType.Gelu,torch.bfloat16,torch.float8_e4m3fnuz,torch.float8_e4m3fnuz,"
      "QuantType.per_Token,1,1,32,0,17.8008,_ZN5aiter56fmoe_stage1_bf16_pertokenFp8_doweight_g1u1_32x64_4tg_pf3E,"
      "0.0%,14.5115,moe_ck2stages_gemm2_256x32x64x128_1x4,0.0%,32.3123,0,5.26,2629.41,\n",
    "model_configs/kimik3_a4w4_tuned_fmoe.csv": MOE_NEW
    + "gfx950,256,1,3584,384,896,16,ActivationType.Situv2,torch.bfloat16,torch.float4_e2m1fn_x2,"
      "torch.float4_e2m1fn_x2,QuantType.per_1x32,1,0,32,0,10.4812,flydsl_moe1_afp4_wfp4_bf16_t32x32x256,0.1%,"
      "9.5512,flydsl_moe2_layout_afp4_wfp4_bf16_t32x128x128,0.0%,20.0324,0,0,0,6.6,184670.18,\n"
    + "gfx950,256,2,3584,384,896,16,ActivationType.Situv2,torch.bfloat16,torch.float4_e2m1fn_x2,"
      "torch.float4_e2m1fn_x2,QuantType.per_1x32,1,0,32,0,10.4812,flydsl_moe1,0.1%,9.5,flydsl_moe2,0.0%,20.0,0,0,"
      "49.07,6.6,184670.18,\n",
    "model_configs/qwen3_5_35b_chunk_gdn_h_opt_tuned.csv": GDN
    + "gfx942,80,torch.bfloat16,128,128,64,32,16,False,True,False,True,False,2048,1,32,32,64,147.9\n",
    "configs/chunk_gdn_h_opt_tuned.csv": GDN,
}


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    for name, text in TABLES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_each_family_and_format_is_read_with_its_reasons(empty_catalog: Catalog, tables: Path) -> None:
    report = import_aiter(empty_catalog, tables, dry_run=True, actor="test").to_json()
    assert report["rows_read"] == 16
    assert report["accepted_by_family"] == {"gdn": 1, "gemm": 8, "moe": 2}
    skipped = {reason: entry["rows"] for reason, entry in report["skipped"].items()}
    assert skipped == {
        "no usable time: us is missing, not a number, or not above zero": 1,
        "the quantized dtype is not recorded and aiter's fp8 rule does not cover gfx 'gfx1250'": 1,
        "bf16 GEMM with scaleAB or bpreshuffle set: a variant not mapped": 1,
        "batched quantized GEMM: the table records neither the quantized dtype nor the scale layout "
        "(not guessed)": 1,
        "column flat is '49.07': the row's fields are shifted": 1,
    }
    assert report["gpus"] == {
        "AMD Instinct MI355X / MI350X (variant not recorded)": 5,
        "AMD Instinct MI300X / MI325X (variant not recorded)": 3,
        "AMD Instinct MI308X (gfx942, 80 CUs; no public datasheet, so no floor)": 2,
        "AMD GPU with 80 CUs (ISA not recorded)": 1,
    }
    assert report["new"]["BenchmarkRun"] == 11 and not report["published"]
    with empty_catalog.engine.connect() as conn:
        assert conn.execute(select(RunRow.digest)).first() is None  # a dry run writes nothing


def _bodies(catalog: Catalog, kind: str) -> list[dict]:
    with catalog.engine.connect() as conn:
        return [json.loads(b) for b in conn.execute(select(ObjectRow.body).where(ObjectRow.kind == kind)).scalars()]


def test_published_runs_carry_the_tuner_statistic_and_err_ratio(empty_catalog: Catalog, tables: Path) -> None:
    report = import_aiter(empty_catalog, tables, dry_run=False, actor="test")
    assert report.new["BenchmarkRun"] == 11
    with empty_catalog.engine.connect() as conn:
        bodies = [json.loads(b) for b in conn.execute(select(RunRow.body)).scalars()]
    runs = {r["spec"]["source"]["external_id"]: r["spec"] for r in bodies}
    first = runs["configs/a8w8_blockscale_tuned_gemm.csv:2"]
    assert first["timing"]["mean_ns"] == 6615 and first["timing"]["samples"] == 101
    assert first["timing"]["method"] == "aiter tuner, mean of 101, profiler device time"
    assert first["timing"]["raw"]["err_ratio"] == "0.0" and "median_ns" not in first["timing"]
    with empty_catalog.engine.connect() as conn:
        assert set(conn.execute(select(RunRow.cohort_key)).scalars()) and all(
            m is not None for m in conn.execute(select(RunRow.median_ns)).scalars())
    again = import_aiter(empty_catalog, tables, dry_run=False, actor="test")
    assert again.new.get("BenchmarkRun", 0) == 0 and again.existing["BenchmarkRun"] == 11


def test_operations_are_their_own_and_bf16_never_joins_an_fp16_definition(empty_catalog: Catalog,
                                                                          tables: Path) -> None:
    import_aiter(empty_catalog, tables, dry_run=False, actor="test")
    operations = {o["metadata"]["name"]: o["spec"] for o in _bodies(empty_catalog, "OperationSpec")}
    assert set(operations) == {
        "gemm-a8w8-blockscale-n4096-k4096", "gemm-bf16-n4096-k4096", "gemm-bf16-out-fp32-n256-k5120",
        "gemm-bf16-bias-n256-k5120", "gemm-a8w8-rowwise-n1280-k8192", "gemm-a4w4-blockscale-n512-k4096",
        "batched-gemm-bf16-b16-n1280-k8192",
        "fused-moe-gelu-per-token-afp8e4m3fnuz-wfp8e4m3fnuz-e8-top2-d2304-i1536-dw1",
        "fused-moe-situv2-per-1x32-afp4x2-wfp4x2-e896-top16-d3584-i384",
        "chunk-gdn-fwd-h-k128-v128-h32-hg16-bt64-h0-hbf16",
    }
    assert operations["gemm-bf16-n4096-k4096"]["dtype_variables"] == {"T": ["bf16"]}
    workloads = _bodies(empty_catalog, "WorkloadCase")
    fp8 = {w["spec"]["dtypes"].get("Q") for w in workloads} - {None}
    assert fp8 == {"fp8_e4m3fnuz", "fp8_e4m3", "int8", "float4_e2m1fn_x2"}  # aiter's fp8 per ISA


def test_the_gpu_label_never_claims_a_product_the_row_does_not_prove() -> None:
    assert registry.device_product("gfx942", 304) == "AMD Instinct MI300X / MI325X (variant not recorded)"
    assert registry.device_product("gfx950", 256) == "AMD Instinct MI355X / MI350X (variant not recorded)"
    assert registry.device_product("gfx1250", 256) == "AMD gfx1250 with 256 CUs (ISA only: no released product named)"
    assert registry.device_product(None, 304) == "AMD GPU with 304 CUs (ISA not recorded)"
    assert registry.gpu_for_product(registry.device_product("gfx942", 80)) is None  # no datasheet, no floor
    both = registry.gpus()["mi300x-mi325x-variant-not-recorded"]
    assert both.bandwidth_gbps == 6000 and registry.gpu_may_be("mi300x", both.slug)


def test_a_gemm_floor_uses_the_operand_dtype_peak(empty_catalog: Catalog, tables: Path) -> None:
    import_aiter(empty_catalog, tables, dry_run=False, actor="test")
    operation = next(o for o in _bodies(empty_catalog, "OperationSpec")
                     if o["metadata"]["name"] == "gemm-a8w8-blockscale-n4096-k4096")
    workload = next(w for w in _bodies(empty_catalog, "WorkloadCase") if w["spec"]["dtypes"].get("Q") == "fp8_e4m3fnuz")
    floor = floor_estimate(operation["spec"], workload["spec"], registry.gpus()["mi300x-mi325x-variant-not-recorded"])
    assert floor.flops == 2 * 1 * 4096 * 4096
    assert floor.peak_flops_per_s == 2614.9e12  # fp8, not the bf16 or the fastest rate
    reads = {t.name: t.bytes for t in floor.tensors}
    assert reads["a"] == 4096 and reads["b"] == 4096 * 4096 and reads["c"] == 4096 * 2
    assert reads["a_scale"] == 32 * 4 and reads["b_scale"] == 32 * 32 * 4


def test_a_moe_floor_counts_the_experts_every_routing_reads(empty_catalog: Catalog, tables: Path) -> None:
    """Each token's top-k experts are distinct, so any routing reads at least top-k experts' weights; the most
    a call can read, min(experts, token · topk), is not a lower bound (12 MI355X rows ran under it)."""
    import_aiter(empty_catalog, tables, dry_run=False, actor="test")
    slug = "fused-moe-situv2-per-1x32-afp4x2-wfp4x2-e896-top16-d3584-i384"
    operation = next(o for o in _bodies(empty_catalog, "OperationSpec") if o["metadata"]["name"] == slug)
    workload = next(w for w in _bodies(empty_catalog, "WorkloadCase")
                    if w["spec"]["operation"] == digest_of(parse_manifest(operation)))
    many_tokens = {**workload["spec"], "axes": {**workload["spec"]["axes"], "token": 64}}  # 64 × 16 > 896 experts
    floor = floor_estimate(operation["spec"], many_tokens, registry.gpus()["mi355x-mi350x-variant-not-recorded"])
    reads = {t.name: t for t in floor.tensors}
    assert reads["w1"].bytes == 16 * (2 * 384) * 3584 // 2  # 16 experts of gate+up, fp4 packed two to a byte
    assert reads["w2"].bytes == 16 * 3584 * 384 // 2
    assert "min(experts, topk) = 16 of 896 rows" in (reads["w1"].note or "")


def test_the_shipped_archive_is_checked_against_its_provenance() -> None:
    files = [TableFile("configs/x_tuned.csv", b"a,b\n1,2\n")]
    archive = pack(files)
    provenance = provenance_of(files, archive)
    assert checked(unpack(archive), provenance) == files
    with pytest.raises(ArchiveError, match="does not match its sha256"):
        checked([TableFile("configs/x_tuned.csv", b"a,b\n1,3\n")], provenance)
    with pytest.raises(ArchiveError, match="not a zstandard-compressed tar"):
        unpack(b"not an archive")


def test_implementation_slugs_are_valid_and_distinct() -> None:
    long = "a8w8_blockscale_1x128x128_256x16x64x256_16x16_16x16_1x1_16x16x1_16x16x1_1x16x1x16_4_1x1_intrawave_v1"
    assert implementation_slug("ck", "a8w8_rowwise_256") == "aiter-ck-a8w8_rowwise_256"
    assert len(implementation_slug("ck", long)) <= 100
    assert implementation_slug("asm", "_ZN5aiterAE") != implementation_slug("asm", "_ZN5aiteraE")


def test_assembled_manifests_equal_built_ones(tables: Path) -> None:
    """The importer's fast path (build_assembled) gives the manifests ``build`` gives."""
    from kernelindex.domain.manifests import build, digest_of, manifest_json
    from kernelindex.sources.aiter.importer import AiterReport, normalize_files, read_folder

    made = normalize_files(read_folder(tables), AiterReport("aiter-tuned-configs", "fixture", "sha256:0"))
    for manifest in [m for m in made if m.kind in ("BenchmarkRun", "WorkloadCase")][:6]:
        data = manifest_json(manifest)
        rebuilt = build(data["kind"], data["spec"], data.get("metadata"))
        assert digest_of(rebuilt) == digest_of(manifest) and manifest_json(rebuilt) == data


def test_keys_that_differ_only_outside_the_tensors_are_distinct_operations() -> None:
    """doweight_stage1 and is_varlen change no tensor: the semantics say them, so the digests differ
    (else two slugs would share one stored operation and their workloads would merge)."""
    from dataclasses import replace

    from kernelindex.domain.manifests import digest_of
    from kernelindex.sources.aiter.moe_gdn import GdnKey, MoeKey, gdn_operation, moe_operation

    moe = MoeKey("silu", "no", "bf16", "bf16", "bf16", True, False, 4096, 384, 128, 8)
    assert digest_of(moe_operation(moe)) != digest_of(moe_operation(replace(moe, weight_in_stage1=True)))
    gdn = GdnKey(128, 128, 64, 32, 16, False, True, False, True, False)
    assert digest_of(gdn_operation(gdn)) != digest_of(gdn_operation(replace(gdn, varlen=True)))


def test_a_row_its_tuner_flags_is_shown_but_not_usable_today(empty_catalog: Catalog, tmp_path: Path) -> None:
    """Issue 43 item 7: two kernels the tuner chose for one shape on two GPUs; the one whose output mismatched its
    reference on 18.25% of elements stays ranked as measured, but its row and run page say its source flags it."""
    table = tmp_path / "configs" / "a8w8_tuned_gemm.csv"
    table.parent.mkdir(parents=True)
    table.write_text(ROWWISE + "gfx942,304,1,1280,8192,torch.int8,34,0,20.5,a8w8_rowwise_256x16x64x512,1,1,0.1825\n"
                     + "gfx950,256,1,1280,8192,torch.int8,34,0,10.5,a8w8_rowwise_256x16x64x512,1,1,0.0\n",
                     encoding="utf-8")
    import_aiter(empty_catalog, tmp_path, dry_run=False, actor="test")
    from datetime import UTC, datetime

    from kernelindex.readmodel.loading import load_operation
    from kernelindex.readmodel.operations import build_operation_page
    from kernelindex.readmodel.runs import run_dossier

    now = datetime(2026, 12, 7, tzinfo=UTC)
    data = load_operation(empty_catalog, "gemm-a8w8-rowwise-n1280-k8192")
    seen = {}
    for gpu in ("mi300x", "mi355x"):
        page = build_operation_page(data, workload=None, cohort=None, gpu=gpu, now=now)
        (row,) = page.ranked
        seen[gpu] = row.implementation
        assert row.rank == 1  # still ranked, as the source measured it
    assert not seen["mi300x"].usable and seen["mi300x"].availability == "flagged by its source"
    assert "18.2% of this kernel's output elements" in seen["mi300x"].not_usable_reasons[0]["sentence"]
    assert seen["mi355x"].usable and seen["mi355x"].availability == "usable today"
    flagged = next(r for r in data.runs if r.spec.timing.raw.get("err_ratio") == "0.1825")
    dossier = run_dossier(empty_catalog, flagged.run_id, now=now)
    assert dossier.implementation.availability == "flagged by its source"


def test_a_ck_instance_name_is_short_on_the_page_and_whole_in_json_and_on_its_run_page(
        empty_catalog: Catalog, tmp_path: Path) -> None:
    """Issue 43 item 7: the operation page's rows and headline name a CK instance by its tile and pipeline (the whole
    name on hover); its JSON and its run page keep the whole name."""
    from fastapi.testclient import TestClient

    from kernelindex import urls
    from kernelindex.web.app import create_app

    kernel = "a8w8_rowwise_256x16x64x512_16x16_1x1_32x8x1_32x8x1_1x16x1x16_4x4x1_1x1_intrawave_v3"
    table = tmp_path / "configs" / "a8w8_tuned_gemm.csv"
    table.parent.mkdir(parents=True)
    table.write_text(ROWWISE + f"gfx950,256,1,1280,8192,torch.int8,34,0,10.5,{kernel},1,1,0.0\n", encoding="utf-8")
    import_aiter(empty_catalog, tmp_path, dry_run=False, actor="test")
    site = TestClient(create_app(empty_catalog))
    path = urls.operation("gemm-a8w8-rowwise-n1280-k8192")
    (row,) = site.get(urls.api(path)).json()["ranked"]
    assert row["implementation"]["title"] == f"aiter gemm_a8w8 · ck · {kernel}"
    html = site.get(path).text
    short = "aiter gemm_a8w8 · ck · a8w8_rowwise 16×64×512 intrawave v3"
    assert short in html and f">{row['implementation']['title']}<" not in html  # the whole name only on hover
    assert f">{row['implementation']['title']}" in site.get(urls.run(row["run_id"])).text
