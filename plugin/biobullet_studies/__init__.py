"""biobullet_studies: the paper studies, a client of the biobullet library.

Scenarios (`biobullet run NAME`), gait data, paper-specific force elements and models, sweep point functions. They
register with the library through entry points (groups `biobullet.studies`, `biobullet.sweep_points`,
`biobullet.force_elements`); the library never imports this package.
"""
