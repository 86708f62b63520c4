"""The `make_ctx` fixture: a DoctorContext built from fakes."""

from __future__ import annotations

import pytest
from doctor_fakes import ROCM_ARCHES, FakeRunner, platform, probe_report

from rocmkit.doctor.context import DoctorContext, TorchFacts


@pytest.fixture
def make_ctx(tmp_path):
    """Build a DoctorContext from fakes; every argument has a harmless default."""

    def make(
        plat=None,
        env=None,
        *,
        facts=None,
        probe=None,
        runner=None,
        groups=None,
        shm_bytes=16 * 2**30,
        cannot_open=None,
        root=None,
    ):
        return DoctorContext(
            platform=plat or platform("cpu"),
            env=env or {},
            root=root or tmp_path,
            runner=runner or FakeRunner(),
            torch_facts_provider=lambda: (
                facts
                or TorchFacts(
                    importable=True,
                    arch_list=ROCM_ARCHES,
                    dtypes=("float8_e4m3fn", "float8_e4m3fnuz"),
                    bf16_supported=True,
                )
            ),
            probe_runner=lambda env, timeout_s: probe or probe_report(),
            user_groups=lambda: groups,
            disk_total_bytes=lambda path: shm_bytes,
            can_open=lambda path: (cannot_open or {}).get(path.name),
        )

    return make
