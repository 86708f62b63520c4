"""torch.profiler runs on CPU, Chrome trace export, and the pure summary over trace events."""

from __future__ import annotations

import json

import pytest
import torch
from profile_tinygpt import TinyGPT

from rocmkit.errors import UserError
from rocmkit.profile.categories import categorise, sdpa_backend
from rocmkit.profile.estimator import ModelShape
from rocmkit.profile.summary import summarize_trace
from rocmkit.profile.trace import ProfileSchedule, StepProfiler, profile_steps

SHAPE = ModelShape(n_layer=2, d_model=64, n_head=4, seq_len=32, vocab_size=256)


def _train_step():
    torch.manual_seed(0)
    model = TinyGPT(SHAPE)
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, SHAPE.vocab_size, (2, SHAPE.seq_len))

    def step(_index: int) -> None:
        model.loss(idx, idx).backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def test_cpu_run_exports_a_trace_and_names_what_dominated(tmp_path):
    trace = tmp_path / "out" / "trace.json"
    summary = profile_steps(
        _train_step(), trace_path=trace, schedule=ProfileSchedule(wait=1, warmup=1, active=2)
    )
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e.get("name", "").startswith("ProfilerStep#") for e in events) == 2
    assert summary.timeline == "host" and summary.num_steps == 2
    assert summary.kernels_per_step is None  # no device kernels on CPU
    assert summary.category_time_us["gemm"] > 0
    assert summary.sdpa_backends.get("flash", 0) >= 1  # CPU SDPA uses its flash kernel
    assert any(op.category == "gemm" for op in summary.top_ops)
    # One host thread: categories and gaps account for the step time.
    assert sum(summary.category_share.values()) == pytest.approx(1.0, abs=0.05)
    assert [m.metric for m in summary.measurements(name="tiny")][:2] == [
        "step_time_ms",
        "ops_per_step",
    ]


def test_too_few_steps_is_a_user_error(tmp_path):
    with StepProfiler(tmp_path / "t.json", ProfileSchedule(wait=1, warmup=1, active=3)) as prof:
        prof.step()
    with pytest.raises(UserError, match="at least 5 steps"):
        prof.summary()


def test_unwritable_trace_path_fails_before_running(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    ran = []
    with pytest.raises(UserError, match="cannot write the directory of the trace file"):
        profile_steps(ran.append, trace_path=blocker / "trace.json")
    assert ran == []


def test_bad_schedule_is_a_user_error():
    with pytest.raises(UserError):
        ProfileSchedule(active=0)


def _x(name, cat, ts, dur, **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": ts,
        "dur": dur,
        "pid": 1,
        "tid": 1,
        "args": args,
    }


def _gpu_trace():
    events = []
    for step, t0 in enumerate((0.0, 1000.0)):
        events.append(_x(f"ProfilerStep#{step}", "user_annotation", t0, 1000.0))
        kernels = [
            ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64", 400.0),
            ("fmha_fwd_d64_bf16_batch", 200.0),
            ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 100.0),
            ("void at::native::vectorized_elementwise_kernel<4, gelu>", 100.0),
        ]
        start = t0 + 100.0
        for corr, (name, dur) in enumerate(kernels, start=step * 10):
            events.append(
                _x("hipLaunchKernel", "cuda_runtime", t0 + 10 + corr % 10, 5.0, correlation=corr)
            )
            kernel = _x(name, "kernel", start, dur, correlation=corr)
            kernel["pid"], kernel["tid"] = 0, 7
            events.append(kernel)
            start += dur
    return events  # each step: 800 us of kernels back to back, 200 us idle


def test_device_summary_splits_kernel_time_and_idle_gaps():
    summary = summarize_trace(_gpu_trace())
    assert summary.timeline == "device" and summary.num_steps == 2
    assert summary.kernels_per_step == 4
    share = summary.category_share
    assert share["gemm"] == pytest.approx(0.4)
    assert share["attention"] == pytest.approx(0.2)
    assert share["communication"] == pytest.approx(0.1)
    assert share["elementwise"] == pytest.approx(0.1)
    assert share["idle"] == pytest.approx(0.2)
    assert summary.top_ops[0].name.startswith("Cijk_") and summary.top_ops[0].count == 1


def test_kernel_belongs_to_the_step_that_launched_it():
    events = _gpu_trace()
    late = _x("Cijk_late_gemm", "kernel", 2500.0, 50.0, correlation=99)  # runs after the last step
    events += [_x("hipLaunchKernel", "cuda_runtime", 1990.0, 5.0, correlation=99), late]
    assert summarize_trace(events).kernels_per_step == 4.5


def test_host_self_time_excludes_children():
    events = [
        _x("ProfilerStep#1", "user_annotation", 0.0, 200.0),
        _x("aten::linear", "cpu_op", 10.0, 100.0),
        _x("aten::addmm", "cpu_op", 20.0, 60.0),
        _x("aten::gelu", "cpu_op", 120.0, 30.0),
    ]
    summary = summarize_trace(events)
    self_us = {op.name: op.self_time_us for op in summary.top_ops}
    assert self_us == {"aten::addmm": 60.0, "aten::linear": 40.0, "aten::gelu": 30.0}
    assert summary.ops_per_step == 2  # linear (with addmm inside) and gelu
    assert summary.category_time_us["idle"] == pytest.approx(200.0 - 130.0)


def test_a_trace_without_steps_is_one_step():
    summary = summarize_trace([_x("aten::mm", "cpu_op", 0.0, 10.0)])
    assert summary.num_steps == 1 and summary.category_share["gemm"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("aten::addmm", "gemm"),
        ("Cijk_Ailk_Bljk_HHS_BH_MT64x64x32_MI32x32x8x1", "gemm"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", "gemm"),
        ("aten::_scaled_dot_product_flash_attention", "attention"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", "attention"),
        ("fmha_bwd_d128_bf16_batch_a32", "attention"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("c10d::allreduce_", "communication"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
            "elementwise",
        ),
        ("aten::add_", "elementwise"),
        (
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>",
            "normalization",
        ),
        ("aten::_log_softmax", "normalization"),
        ("Memcpy HtoD (Pageable -> Device)", "copy"),
        ("aten::copy_", "copy"),
        ("aten::view", "other"),
    ],
)
def test_categories_of_real_op_and_kernel_names(name, category):
    assert categorise(name) == category


def test_sdpa_backend_names():
    assert sdpa_backend("aten::_scaled_dot_product_attention_math") == "math"
    assert sdpa_backend("aten::_scaled_dot_product_efficient_attention") == "efficient"
    assert sdpa_backend("aten::addmm") is None


def test_data_loading_annotations_are_timed_per_step():
    events = [
        _x("ProfilerStep#1", "user_annotation", 0.0, 1000.0),
        _x(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            "user_annotation",
            0.0,
            600.0,
        ),
        _x("aten::mm", "cpu_op", 700.0, 200.0),
    ]
    summary = summarize_trace(events)
    assert summary.data_time_us == pytest.approx(600.0)
    assert summarize_trace(events[2:]).data_time_us is None


LONG_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


@pytest.mark.parametrize(
    "name, short",
    [
        (LONG_KERNEL, "at::native::vectorized_elementwise_kernel<…>"),
        (
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>"
            "(float*, float const*, int)",
            "at::native::(anon)::cunn_SoftMaxForward<…>",
        ),
        (
            "void cutlass::Kernel2<cutlass_80_gemm_bf16>(Params)",
            "cutlass::Kernel2<cutlass_80_gemm_bf16>",
        ),
        ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pageable -> Device)"),
        ("aten::mm", "aten::mm"),
        ("x" * 200, "x" * 79 + "…"),
    ],
)
def test_kernel_names_are_shortened_as_profilers_show_them(name, short):
    from rocmkit.profile.summary import short_kernel_name

    assert short_kernel_name(name) == short


def test_the_table_shows_the_short_name_and_json_keeps_the_full_one(capsys):
    import dataclasses

    from rocmkit.console import make_console
    from rocmkit.profile.commands import summary_document
    from rocmkit.report.view_profile import render_summary

    events = _gpu_trace()
    for event in events:
        if event["name"].startswith("void at::native"):
            event["name"] = LONG_KERNEL
    summary = summarize_trace(events)
    render_summary(make_console(), summary_document(summary, []), title="profile")
    table = capsys.readouterr().out
    assert "vectorized_elementwise_kernel<…>" in table and "CUDAFunctor_add" not in table
    names = [op["name"] for op in summary_document(summary, [])["top_ops"]]
    assert LONG_KERNEL in names and dataclasses.is_dataclass(summary)
