"""Turning runs into judgements: planning, executions, mutants, probes, figures, flags, the audit and its report."""
