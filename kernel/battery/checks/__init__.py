"""The catalog tests, one module each; `kernel.battery.REGISTRY` maps keys to them."""
