"""biobullet.scenarios"""
