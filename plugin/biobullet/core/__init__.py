"""Core layer: errors, the plugin registry, atomic output, events, the XML-attribute parser and the jit switch.

Imports nothing else of biobullet; every other layer may import it.
"""
