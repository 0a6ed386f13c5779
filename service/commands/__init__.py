"""Command modules: each defines ``register(app: typer.Typer) -> None``."""
