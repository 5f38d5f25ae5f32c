"""biobullet.analysis — post-processing of simulated trajectories (import the submodules you need).

poincare      Poincaré (stroboscopic) samples at t = nT, period-n classification
spectrum      amplitude spectra over windows of 6mT (subharmonics 1/2, 1/3 on exact bins), subharmonic content
metrics       rmse, nrmse, pearson of two sampled signals (reference, other)
plots         the spectrum-vs-parameter map (matplotlib Agg)
"""
