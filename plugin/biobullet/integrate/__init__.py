"""biobullet.integrate"""
