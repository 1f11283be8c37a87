"""The integrity taxonomy: twelve subcategories in four groups, and audit observations."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["GROUPS", "SUBCATEGORIES", "Observation", "Subcategory"]


class Subcategory(StrEnum):
    WEIGHT_PROVENANCE = "weight_provenance"
    DATA_PROVENANCE = "data_provenance"
    TEACHER_AUTHORIZATION = "teacher_authorization"
    DECODING = "decoding_parameters"
    STOPPING = "stopping_eos"
    TEMPLATE = "prompt_template"
    HARNESS = "harness_verifier"
    TEST_SET_ACCESS = "test_set_access"
    SAMPLE_INCLUSION = "sample_inclusion"
    REPEATED_RUNS = "repeated_run_selection"
    METRIC_ATTRIBUTION = "metric_attribution"
    FAILURE_DISCLOSURE = "failure_disclosure"


SUBCATEGORIES: tuple[Subcategory, ...] = tuple(Subcategory)

GROUPS: dict[str, tuple[Subcategory, ...]] = {
    "training": (Subcategory.WEIGHT_PROVENANCE, Subcategory.DATA_PROVENANCE, Subcategory.TEACHER_AUTHORIZATION),
    "inference": (Subcategory.DECODING, Subcategory.STOPPING, Subcategory.TEMPLATE),
    "evaluation": (Subcategory.HARNESS, Subcategory.TEST_SET_ACCESS, Subcategory.SAMPLE_INCLUSION),
    "reporting": (Subcategory.REPEATED_RUNS, Subcategory.METRIC_ATTRIBUTION, Subcategory.FAILURE_DISCLOSURE),
}


class Observation(StrEnum):
    EXECUTED = "EXECUTED"
    ATTEMPTED_BLOCKED = "ATTEMPTED_BLOCKED"
    NOT_FOUND_FULL = "NOT_FOUND_FULL"
    NOT_FOUND_PARTIAL = "NOT_FOUND_PARTIAL"
    UNKNOWN = "UNKNOWN"
