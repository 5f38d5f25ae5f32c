"""Compliant contact: normal-force laws, friction laws, 1-DOF impact reference and law reports.

`contact_intervals(trajectory)` lists the contact intervals an engine run logged (start, end, peak force,
impulse, restitution, dissipation). Build laws from XML attributes with `normal_law_from_attributes` / `friction_law_from_attributes` (dispatch on
``normal_law`` / ``friction_law``), or instantiate the classes directly. Sign conventions: see `contact.base`.
"""
from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.contact.friction import Ambrosio, Coulomb, NoFriction, Regularized, Stribeck
from biobullet.contact.normal import Flores, Hertz, HuGuo, HuntCrossley, KelvinVoigt, KelvinVoigtSmooth, RestitutionLaw
from biobullet.contact.registry import (friction_law_from_attributes, friction_law_names, get_friction_law, get_normal_law,
                       normal_law_from_attributes, normal_law_names, register_friction_law,
                       register_normal_law)
from biobullet.contact.element import contact_intervals

__all__ = [
    "NormalLaw", "FrictionLaw", "RestitutionLaw",
    "KelvinVoigt", "KelvinVoigtSmooth", "Hertz", "HuntCrossley", "Flores", "HuGuo",
    "NoFriction", "Coulomb", "Regularized", "Ambrosio", "Stribeck",
    "normal_law_from_attributes", "friction_law_from_attributes", "normal_law_names", "friction_law_names",
    "get_normal_law", "get_friction_law", "register_normal_law", "register_friction_law", "contact_intervals",
]
