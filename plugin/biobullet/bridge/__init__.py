"""biobullet.bridge"""
