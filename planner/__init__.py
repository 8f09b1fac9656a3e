"""PDDL domain and problems for the HAB scenarios, planning, and grounding plan steps to skill calls."""
