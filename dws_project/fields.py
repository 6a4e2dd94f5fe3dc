"""A CharField stored as a PostgreSQL enum type, so seed 000's operator SQL (`::..._enum`) works."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


class PostgresEnumField(models.CharField):
    """The enum type itself is created by a migration (see `create_enum`)."""

    def __init__(self, *args: Any, enum_name: str, **kwargs: Any) -> None:
        self.enum_name = enum_name
        kwargs.setdefault("max_length", 32)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[Any, Any, Any, Any]:
        name, path, args, kwargs = super().deconstruct()
        kwargs["enum_name"] = self.enum_name
        return name, path, args, kwargs

    def db_type(self, connection: Any) -> str:
        return self.enum_name

    def cast_db_type(self, connection: Any) -> str:
        return self.enum_name


def create_enum(enum_name: str, values: list[str]) -> migrations.RunSQL:
    """The migration step that creates (and on reverse drops) an enum type."""
    labels = ", ".join(f"'{v}'" for v in values)
    return migrations.RunSQL(
        f"CREATE TYPE {enum_name} AS ENUM ({labels});",
        reverse_sql=f"DROP TYPE {enum_name};",
    )
