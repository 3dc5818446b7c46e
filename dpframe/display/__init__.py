"""Display of public information: text tables (rich) for reports and the CLI, HTML for
notebooks. Post-processing only: it renders budgets, declarations, provenance and released
values, never data."""
