"""Probe (issue 19): does the PyTorch profiler give per-call kernel/memcpy/memset durations here,
how fast, and how should the L2 flush be done. Writes raw data under $OUT."""
import json
import os
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function

OUT = os.environ.get("OUT", "/tmp/out")
print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
dev = "cuda"
flush_buf = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
flush_view = flush_buf.view(torch.int64).view(-1, 4096)
flush_out = torch.empty(flush_view.shape[0], dtype=torch.int64, device=dev)


def flush_write():
    flush_buf.zero_()


def flush_read():
    torch.sum(flush_view, dim=1, out=flush_out)


def flush_drain():
    flush_buf.zero_()
    torch.cuda.synchronize()


x = torch.randn(2048, 128, device=dev)
y = torch.empty_like(x)
big = torch.randn(64 * 1024 * 1024 // 4, device=dev)


def softmax():
    torch.softmax(x, dim=-1, out=y)


def syncing():
    s = x.sum()
    v = s.item()  # DtoH + stream sync
    torch.softmax(x, dim=-1, out=y)
    return v


side = torch.cuda.Stream()


def two_streams():
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        big.mul_(1.0000001)
    torch.softmax(x, dim=-1, out=y)
    torch.cuda.current_stream().wait_stream(side)


def memcpy_call():
    y.copy_(x)
    y.zero_()


def attrs(e):
    out = {}
    for name in dir(e):
        if name.startswith("_"):
            continue
        try:
            v = getattr(e, name)
            v = v() if callable(v) else v
            if isinstance(v, (int, float, str, bool)) or v is None:
                out[name] = v
            else:
                out[name] = str(v)[:80]
        except Exception as exc:  # noqa: BLE001
            out[name] = f"ERR {type(exc).__name__}"
    return out


def traced(call, flush, n, dump=None, sync_events=False):
    for _ in range(3):
        flush(); call()
    torch.cuda.synchronize()
    kw = {}
    if sync_events:
        from torch._C._profiler import _ExperimentalConfig
        kw["experimental_config"] = _ExperimentalConfig(enable_cuda_sync_events=True)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kw) as prof:
        for i in range(n):
            flush()
            with record_function(f"ki_call_{i}"):
                call()
        torch.cuda.synchronize()
    t1 = time.perf_counter()
    evs = list(prof.profiler.kineto_results.events())
    t2 = time.perf_counter()
    if dump:
        with open(os.path.join(OUT, dump), "w") as f:
            json.dump([attrs(e) for e in evs], f)
        prof.export_chrome_trace(os.path.join(OUT, dump.replace(".json", ".chrome.json")))
    return evs, t1 - t0, t2 - t1


def per_call(evs, n):
    ranges = {}
    for e in evs:
        nm = e.name()
        if nm.startswith("ki_call_") and e.device_type().name == "CPU":
            ranges[int(nm[8:])] = (e.start_ns(), e.end_ns())
    launch = {}
    for e in evs:
        if e.device_type().name == "CPU" and e.correlation_id():
            launch[e.correlation_id()] = e.start_ns()
    calls = {i: [] for i in range(n)}
    syncs = {i: [] for i in range(n)}
    for e in evs:
        if e.device_type().name == "CUDA":
            t = launch.get(e.correlation_id())
            for i, (a, b) in ranges.items():
                if t is not None and a <= t <= b:
                    calls[i].append((e.start_ns(), e.end_ns(), e.name()))
        elif e.device_type().name == "CPU" and "ynchronize" in e.name() or "Memcpy" in e.name():
            for i, (a, b) in ranges.items():
                if a <= e.start_ns() <= b:
                    syncs[i].append(e.name())
    dev_t, spans = [], []
    for i, iv in calls.items():
        if not iv:
            continue
        iv.sort()
        tot, cur_s, cur_e = 0, iv[0][0], iv[0][1]
        for s, e, _ in iv[1:]:
            if s > cur_e:
                tot += cur_e - cur_s; cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        tot += cur_e - cur_s
        dev_t.append(tot)
        spans.append(max(e for _, e, _ in iv) - iv[0][0])
    return dev_t, spans, calls, syncs


def graph_time(call, flush, n=20, reps=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    st = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(n)]
    en = [torch.cuda.Event(enable_timing=True, external=True) for _ in range(n)]
    with torch.cuda.graph(g, stream=s):
        for a, b in zip(st, en):
            flush(); a.record(); call(); b.record()
    times = []
    for _ in range(reps):
        g.replay(); en[-1].synchronize()
        times += [a.elapsed_time(b) * 1e6 for a, b in zip(st, en)]
    return statistics.median(times)


res = {}
# 1. structure of the events, one short dump
evs, _, _ = traced(softmax, flush_read, 5, dump="events_softmax.json")
evs, _, _ = traced(syncing, flush_read, 5, dump="events_syncing.json")
evs, _, _ = traced(syncing, flush_read, 5, dump="events_syncing_syncev.json", sync_events=True)
d, sp, calls, syncs = per_call(evs, 5)
print("syncing: device", d, "spans", sp, "syncs", syncs[1], "kernels", [c[2][:40] for c in calls[1]], flush=True)
evs, _, _ = traced(two_streams, flush_read, 5, dump="events_two_streams.json")
d, sp, calls, _ = per_call(evs, 5)
print("two_streams: device", d, "spans", sp, flush=True)
evs, _, _ = traced(memcpy_call, flush_read, 5, dump="events_memcpy.json")
d, sp, calls, _ = per_call(evs, 5)
print("memcpy: device", d, "kinds", [c[2][:30] for c in calls[1]], flush=True)

# 2. throughput: samples per second
for n in (50, 200):
    evs, t_run, t_ev = traced(softmax, flush_read, n)
    t3 = time.perf_counter()
    d, sp, _, _ = per_call(evs, n)
    t4 = time.perf_counter()
    print(f"softmax n={n}: profiled {t_run*1e3:.1f} ms, events {t_ev*1e3:.1f} ms ({len(evs)} ev),"
          f" parse {(t4-t3)*1e3:.1f} ms; median device {statistics.median(d):.0f} ns span {statistics.median(sp):.0f}",
          flush=True)

# 3. flush: write vs drain vs read vs none, CUPTI device time and graph time
ops = {"softmax_2048x128": softmax,
       "copy_1MiB": (lambda a=torch.randn(262144, device=dev), b=torch.empty(262144, device=dev): b.copy_(a)),
       "copy_256MiB": (lambda a=big, b=torch.empty_like(big): b.copy_(a))}
flushes = {"write": flush_write, "drain": flush_drain, "read": flush_read, "none": (lambda: None)}
for oname, op in ops.items():
    for fname, fl in flushes.items():
        evs, _, _ = traced(op, fl, 200)
        d, _, _, _ = per_call(evs, 200)
        g = graph_time(op, fl) if fname != "drain" else float("nan")
        res[f"{oname}/{fname}"] = {"cupti_median_ns": statistics.median(d), "p20": sorted(d)[len(d)//5],
                                   "graph_median_ns": g}
        print(f"{oname:18s} flush={fname:5s} cupti median {statistics.median(d):9.0f} ns  graph {g:9.0f} ns", flush=True)
# flush cost itself
for fname, fl in (("write", flush_write), ("read", flush_read)):
    evs, _, _ = traced(fl, lambda: None, 50)
    d, _, _, _ = per_call(evs, 50)
    print(f"flush {fname}: {statistics.median(d):.0f} ns", flush=True)
    res[f"flush_cost/{fname}"] = statistics.median(d)
json.dump(res, open(os.path.join(OUT, "probe.json"), "w"), indent=1)
