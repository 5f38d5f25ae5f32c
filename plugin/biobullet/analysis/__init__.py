"""biobullet.analysis"""
