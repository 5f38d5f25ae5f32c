"""biobullet.validate"""
