"""The real-project corpus for `rocmkit port` (issue 26): manifest, split and hand-written hazards.

port_corpus.toml pins each project's PyPI sdist by file name and sha256, names the part of the
tree that is scanned and its side of the held-out split; tests/fixtures/port_hazards/<name>.toml
lists the hazards a ROCm port maintainer would act on and the places that only look like one.
`fetch` downloads into .cache/port-corpus/<name>-<version>/tree (git-ignored), the same way as the
hipify corpus.

    python benchmarks/port_corpus.py            # fetch what is missing
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hipify_corpus  # download, sha256 check and unpacking are shared with the hipify corpus

REPO = hipify_corpus.REPO
MANIFEST = Path(__file__).resolve().parent / "port_corpus.toml"
HAZARDS = REPO / "tests" / "fixtures" / "port_hazards"
CACHE = REPO / ".cache" / "port-corpus"
# test2 onwards are fresh held-out parts, each added after the previous one had been scored or committed.
PARTS = (
    "dev",
    "test",
    "test2",
    "test3",
    "test4",
    "test5",
    "test6",
    "test7",
    "test8",
    "test9",
    "test10",
    "test11",
    "test12",
    "test13",
    "test14",
    "test15",
    "test16",
    "test17",
    "test18",
    "test19",
    "test20",
    "test21",
    "test22",
    "test23",
    "test24",
    "test25",
    "test26",
    "test27",
    "test28",
    "test29",
    "test30",
    "test31",
    "test32",
    "test33",
    "test34",
    "test35",
    "test36",
    "test37",
    "test38",
    "test39",
    "test40",
    "test41",
    "test42",
    "test43",
    "test44",
    "test45",
    "test46",
    "test47",
    "test48",
    "test49",
    "test50",
    "test51",
    "test52",
    "test54",
    "test55",
    "test56",
    "test57",
    "test58",
    "test59",
    "test60",
    "test61",
    "test62",
    "test63",
    "test64",
    "test65",
    "test66",
    "test67",
    "test68",
    "test69",
    "test70",
    "test71",
    "test72",
    "test73",
    "test74",
    "test75",
    "test76",
    "test77",
    "test78",
    "test79",
    "test80",
    "test81",
    "test82",
    "test83",
    "test84",
    "test85",
    "test86",
    "test87",
    "test88",
    "test89",
    "test90",
    "test91",
    "test92",
    "test93",
    "test94",
    "test95",
    "test96",
    "test97",
    "test98",
    "test99",
    "test100",
    "test101",
    "test102",
    "test103",
    "test104",
    "test105",
    "test106",
    "test107",
    "test108",
    "test109",
    "test110",
    "test111",
    "test112",
    "test113",
    "test114",
    "test115",
    "test116",
    "test117",
    "test118",
    "test119",
    "test120",
    "test121",
    "test122",
    "test123",
    "test124",
    "test125",
    "test126",
    "test127",
    "test128",
    "test129",
    "test130",
    "test131",
    "test132",
    "test133",
    "test134",
    "test135",
    "test136",
    "test137",
    "test138",
    "test139",
    "test140",
    "test141",
    "test142",
    "test143",
    "test144",
    "test145",
    "test146",
    "test147",
    "test148",
    "test149",
    "test150",
    "test151",
    "test152",
    "test153",
    "test154",
    "test155",
    "test156",
    "test157",
    "test158",
    "test159",
    "test160",
    "test161",
    "test162",
    "test163",
    "test164",
    "test165",
    "test166",
    "test167",
    "test168",
    "test169",
    "test170",
    "test171",
    "test172",
    "test173",
    "test174",
    "test176",
    "test177",
    "test178",
    "test179",
    "test180",
    "test181",
    "test182",
    "test183",
    "test184",
    "test185",
    "test186",
    "test187",
    "test188",
    "test189",
    "test191",
    "test192",
    "test193",
    "test194",
    "test195",
    "test196",
    "test197",
    "test198",
    "test199",
    "test201",
    "test203",
    "test205",
    "test211",
    "test212",
    "test213",
    "test214",
    "test216",
    "test217",
    "test218",
    "test219",
    "test220",
    "test221",
    "test222",
    "test223",
    "test224",
    "test225",
    "test226",
    "test227",
    "test228",
    "test229",
    "test230",
    "test231",
    "test232",
    "test233",
    "test234",
    "test235",
    "test236",
    "test237",
    "test238",
    "test239",
    "test240",
    "test241",
    "test242",
    "test243",
    "test246",
    "test247",
    "test248",
    "test249",
    "test250",
    "test251",
    "test260",
    "test261",
    "test262",
    "test263",
    "test264",
    "test265",
    "test266",
    "test267",
    "test268",
    "test269",
    "test270",
    "test271",
    "test272",
    "test273",
    "test274",
    "test275",
    "test276",
    "test277",
    "test278",
    "test279",
    "test280",
    "test281",
    "test282",
    "test283",
    "test284",
    "test285",
    "test286",
    "test287",
    "test290",
    "test292",
    "test291",
    "test288",
    "test289",
    "test293",
    "test294",
    "test295",
    "test296",
    "test297",
    "test298",
    "test299",
    "test300",
    "test301",
    "test302",
    "test303",
    "test304",
    "test305",
    "test306",
    "test307",
    "test308",
    "test309",
    "test310",
    "test311",
    "test312",
    "test313",
    "test314",
    "test315",
    "test316",
    "test317",
    "test318",
    "test319",
    "test320",
    "test321",
    "test322",
    "test323",
    "test324",
    "test325",
    "test326",
    "test327",
    "test328",
    "test329",
    "test330",
    "test331",
    "test332",
    "test333",
    "test335",
    "test336",
    "test338",
    "test340",
    "test339",
    "test341",
    "test342",
    "test343",
    "test344",
    "test345",
    "test346",
    "test347",
    "test348",
    "test349",
    "test350",
    "test351",
    "test352",
    "test353",
    "test354",
    "test355",
    "test356",
    "test357",
    "test358",
    "test359",
    "test360",
    "test361",
    "test362",
    "test363",
    "test364",
    "test365",
    "test366",
    "test367",
    "test368",
    "test369",
    "test370",
    "test371",
    "test372",
    "test373",
    "test374",
    "test375",
    "test376",
)
SEVERITIES = ("warn", "error")

# The hazard kinds a list may use; the scorer maps rule ids onto them (port_score.RULE_KINDS).
KINDS = {
    "cuda-only-package": "a dependency with no ROCm build (pinned, required or installed)",
    "cuda-only-import": "an import of a CUDA-only module on a path ROCm users reach",
    "torch-cuda-pin": "torch installed from a CUDA index/wheel, or a pin that pulls the CUDA build",
    "cuda-base-image": "a Dockerfile or script starting from an NVIDIA CUDA image",
    "docker-gpus": "docker --gpus / runtime nvidia / compose device reservation for nvidia",
    "nvidia-smi-call": "nvidia-smi (or NVML) called to find or query GPUs",
    "nvml-call": "pynvml / nvidia-ml-py used to find or query GPUs",
    "torch-version-cuda": "a torch.version.cuda test that misfires on ROCm",
    "device-capability": "a get_device_capability() test that misfires on ROCm",
    "cudnn-disabled": "torch.backends.cudnn.enabled = False (disables MIOpen)",
    "warp-size-32": "a warp size of 32 written down where the wavefront is 64",
    "cuda-arch-guard": "CUDA C++ guarded by __CUDA_ARCH__ (empty or wrong under HIP)",
    "inline-ptx": "inline PTX asm in CUDA C++",
    "cuda-extension-no-hip": "a CUDA extension build with no HIP path (fails or is skipped)",
    "gencode-flags": "nvcc-only arch flags (-gencode, sm_XX) passed on a ROCm build",
    "cmake-no-hip": "a CMake build with CUDA only",
    "nccl-env": "an NCCL variable with no RCCL effect or a different meaning",
    "nvidia-container-env": "NVIDIA_VISIBLE_DEVICES and friends",
    "tensorrt-import": "TensorRT / TensorRT-LLM used on a reachable path",
    "cuda-visible-devices": "CUDA_VISIBLE_DEVICES used where ROCm needs another variable",
}


@dataclass(frozen=True, kw_only=True)
class Project:
    """One pinned sdist, the part of it that is scanned and its side of the split."""

    name: str
    kind: str
    version: str
    file: str
    url: str
    sha256: str
    size_bytes: int
    repository: str
    part: str
    scan: tuple[str, ...]
    contents: str

    def root(self, cache: Path = CACHE) -> Path:
        return cache / f"{self.name}-{self.version}" / "tree"


def load_manifest(path: Path = MANIFEST) -> list[Project]:
    document: dict[str, Any] = tomllib.loads(path.read_text())
    return [Project(**_frozen(entry)) for entry in document["project"]]


def _frozen(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: tuple(v) if isinstance(v, list) else v for key, v in entry.items()}


def load_split(path: Path = MANIFEST) -> dict[str, Any]:
    return dict(tomllib.loads(path.read_text())["split"])


def load_hazards(name: str, folder: Path = HAZARDS) -> dict[str, Any]:
    """{'hazard': [...], 'not_hazard': [...]} of one project (empty lists when none)."""
    document = tomllib.loads((folder / f"{name}.toml").read_text())
    return {"hazard": document.get("hazard", []), "not_hazard": document.get("not_hazard", [])}


def fetch(projects: list[Project], cache: Path = CACHE) -> list[str]:
    """Download, check and unpack what is missing; one line per package that failed."""
    return hipify_corpus.fetch(projects, cache)  # type: ignore[arg-type]


def main() -> int:
    problems = fetch(load_manifest())
    for line in problems:
        print(f"port corpus: could not fetch {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
