"""biobullet.forces"""
