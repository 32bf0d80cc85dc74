"""Why an inference is incomplete, in words: the kernel's problem bits turned into reasons."""

from __future__ import annotations

from tracer.telemetry import kernel as k


def describe_problems(bits: int, lost: int = 0, status: int = 0) -> tuple[str, ...]:
    """Turn an inference's problem bits into the reasons shown to the user."""
    reasons = []
    if bits & k.P_LOST_ENTIRELY:
        reasons.append("every record of this inference was lost")
    if bits & k.P_LOST_RECORDS:
        reasons.append(f"{lost} record(s) lost (sequence gap)")
    if bits & k.P_OVERFLOW:
        reasons.append("ITM overflow: the target dropped trace data")
    if bits & k.P_GAP:
        reasons.append("capture gap: bytes were lost in the capture")
    if bits & k.P_DESYNC:
        reasons.append("damaged ITM stream: bytes lost or corrupted on the way")
    if bits & k.P_DAMAGED:
        reasons.append("damaged record (wrong length, check byte or shape)")
    if bits & k.P_BEGIN_MISSING:
        reasons.append("its begin record is missing")
    if bits & k.P_END_MISSING:
        reasons.append("its end record is missing")
    if bits & k.P_LAYER_MISMATCH:
        reasons.append("layer begin/end records do not pair up")
    if bits & k.P_STATUS:
        reasons.append(f"the firmware reported status {status}")
    if bits & k.P_CAPTURE_ENDED:
        reasons.append("the capture ended during this inference")
    if bits & k.P_RESTARTED:
        reasons.append("the target restarted during this inference")
    return tuple(reasons)
