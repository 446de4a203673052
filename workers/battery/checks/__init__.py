"""The catalog tests, one module each; `workers.battery.REGISTRY` maps keys to them."""
