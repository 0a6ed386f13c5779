"""Built-in recognizers; each module registers its classes with ``@register(name)``."""
