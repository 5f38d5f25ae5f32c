"""Paper studies built on the biobullet library (the library never imports this package)."""
