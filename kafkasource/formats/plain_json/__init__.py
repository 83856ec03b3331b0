"""Plain JSON values and keys (no schema registry): decoded at the source with a schema the user gives, encoded
by the sink."""
