"""biobullet.constraints"""
