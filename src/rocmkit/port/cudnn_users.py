"""`torch.backends.cudnn.enabled = False` in a project that calls nothing cuDNN serves.

The flag turns off the cuDNN backend (MIOpen on a ROCm torch), which PyTorch uses for
convolutions, batch/instance norm, RNNs (LSTM, GRU), CTC loss and grid sampling (torch.backends
docs; aten's cudnn/ and miopen/ native folders). A project whose own code names none of those
(and imports no vision model library that brings them) loses nothing on ROCm by turning it off:
the finding is info, saying why.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from rocmkit.port.findings import PortFinding
from rocmkit.port.text_scan import read_head

_SERVED = re.compile(
    r"\b(?:Conv(?:Transpose)?[123]d|conv(?:_transpose)?[123]d|(?:Sync)?BatchNorm[123]?d?|"
    r"batch_norm|InstanceNorm[123]d|instance_norm|LSTM|GRU|RNN|lstm|gru|ctc_loss|CTCLoss|"
    r"grid_sample|torchvision|timm|ultralytics|detectron2|mmcv|mmdet|segmentation_models)\b"
)
_MAX_BYTES = 4 << 20


def without_users(
    findings: list[PortFinding], files: Iterable[tuple[str, str, str]]
) -> list[PortFinding]:
    """cudnn-disabled findings at info where no Python file of the project uses what cuDNN
    (MIOpen) serves; the others unchanged. Reads the files only when there is such a finding."""
    if not any(f.rule_id == "cudnn-disabled" and f.severity != "info" for f in findings):
        return findings
    for path, _, kind in files:
        if kind != "python":
            continue
        if _SERVED.search(read_head(path, _MAX_BYTES).decode("utf-8", "replace")):
            return findings
    note = "the project uses no convolution, batch norm, RNN or CTC: what cuDNN/MIOpen serves"
    return [
        dataclasses.replace(f, severity="info", note=note)
        if f.rule_id == "cudnn-disabled" and f.severity != "info"
        else f
        for f in findings
    ]
