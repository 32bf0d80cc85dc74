"""Budgets: what the compiler or planner predicted (Vela, Glow, the user's TOML/JSON), normalized
into one :class:`Budget`, and the matching of measured layers to predicted ones.
"""

from tracer.budget.loader import file_kind, load_budget
from tracer.budget.model import Budget, BudgetLayer, BudgetPart, Compiler, ModelBudget

__all__ = ["Budget", "BudgetLayer", "BudgetPart", "Compiler", "ModelBudget", "file_kind", "load_budget"]
