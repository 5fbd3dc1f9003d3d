"""The rule engine: YAML rules (data) evaluated over fact rows computed from a trace."""
