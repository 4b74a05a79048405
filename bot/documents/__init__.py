"""Documents the shell prints from core's values: the purchase order's PDF (pdf). Imports core."""
