"""auto.register.schemas and Protobuf: no schema is derived, as a .proto's field numbers and names are the writer's
to choose.
"""

from __future__ import annotations

from kafkasource.formats.shapes import SchemaUnfit


def derive_protobuf(data_type, column: str) -> str:
    """Never a schema: SchemaUnfit saying what to do instead."""
    raise SchemaUnfit(
        "auto.register.schemas does not derive Protobuf schemas (a .proto has field numbers and names of its own "
        "that a Spark type cannot say): register the .proto under the subject, then write"
    )
