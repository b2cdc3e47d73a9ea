"""Bring your own codegen (BYOC): offload parts of a graph to external code generators.

The passes (``transforms/merge_composite.py``, ``annotate_target.py``,
``merge_compiler_regions.py``, ``partition_graph.py``) read the registries of
``dlc.byoc.targets``; patterns are ``dlc.byoc.patterns``; partitions are compiled by
``dlc.byoc.codegen_run.run_codegens``. See docs/architecture.md, section "BYOC".
"""

from dlc.byoc.patterns import Match, Pattern, is_constant, is_input, is_op, match, wildcard
from dlc.byoc.targets import (
    ANNOTATION_ATTR,
    CODEGEN_ATTR,
    COMPOSITE_ATTR,
    COMPOSITE_ID_ATTR,
    CONSTANT_ARG_ATTR,
    EXTERNAL_ATTR,
    REPORT_ATTR,
    CodegenContext,
    CodegenError,
    ExternalKernel,
    UnknownTargetError,
    check_targets,
    codegen,
    codegen_of,
    get_target,
    known_targets,
    pattern_table,
    patterns_of,
    predicate_of,
    register_target_module,
    supports,
    unregister,
)

__all__ = [
    "ANNOTATION_ATTR", "CODEGEN_ATTR", "COMPOSITE_ATTR", "COMPOSITE_ID_ATTR", "CONSTANT_ARG_ATTR",
    "EXTERNAL_ATTR", "REPORT_ATTR", "CodegenContext", "CodegenError", "ExternalKernel", "Match",
    "Pattern", "UnknownTargetError", "check_targets", "codegen", "codegen_of", "get_target",
    "is_constant", "is_input", "is_op", "known_targets", "match", "pattern_table", "patterns_of",
    "predicate_of", "register_target_module", "supports", "unregister", "wildcard",
]
