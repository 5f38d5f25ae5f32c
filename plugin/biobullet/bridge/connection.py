"""PyBullet client handling and body set-up for the bridge (pybullet is imported only inside functions)."""
from __future__ import annotations

import os
import tempfile
import warnings
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.core.native import import_pybullet, native_output

#: Bounds given to PyBullet's joint-limit constraints to switch them off (rad or m); the limit rows stay
#: in PyBullet's solver but can never become active.
DISABLED_LIMIT = 1.0e10
#: PyBullet clamps every joint rate at 100 rad/s (or m/s) by default; the reference engine does not. A free
#: shoulder passing the YZY gimbal singularity (elevation → 0) reaches that easily, so the clamp is lifted.
MAX_JOINT_VELOCITY = 1.0e6
#: PyBullet's URDF reader (BulletURDFImporter::loadURDF) takes a file in fgets() pieces of at most 8191 bytes and
#: puts a newline after each piece: a longer line is broken mid-token ("Cannot load URDF file" when the break falls
#: in a tag name; a split number read short when it falls in an attribute value)
PYBULLET_LINE_BYTES = 8191
#: a user's body whose joint axis is off unit length by more than this is refused (its links turn by axis·θ̇ in
#: PyBullet's step: a relative error of that size, ≈ the bridge's own promise of 1e-6)
NON_UNIT_AXIS = 1e-6


def resolve_client(client, *, gui: bool) -> tuple[int, bool]:
    """(physicsClientId, owned). `client`: None → a new DIRECT (or GUI) connection the bridge owns; an int
    physicsClientId; or a `pybullet_utils.bullet_client.BulletClient` (its `_client` id is used)."""
    p = import_pybullet()   # its build banner stays off the terminal (biobullet --verbose shows it)
    if client is None:
        mode = p.DIRECT
        if gui:
            if os.environ.get("DISPLAY") or os.name == "nt":
                mode = p.GUI
            else:
                warnings.warn("Bridge(gui=True): no display (DISPLAY is not set), connecting DIRECT instead; "
                              "use biobullet.render.render_frames() for offscreen video", RuntimeWarning,
                              stacklevel=3)
        cid = p.connect(mode)
        if cid < 0:
            raise ModelError("PyBullet could not connect", attribute="client")
        return cid, True
    if gui:
        raise ModelError("gui=True only applies when the bridge makes its own connection (client=None)",
                         attribute="gui")
    cid = getattr(client, "_client", client)
    if isinstance(cid, (bool, np.bool_)) or not isinstance(cid, (int, np.integer)):
        raise ModelError(f"argument 'client' is {type(client).__name__}", attribute="client",
                         expected="None, a physicsClientId (int) or a pybullet_utils BulletClient")
    if not p.isConnected(physicsClientId=int(cid)):
        raise ModelError(f"PyBullet client {int(cid)} is not connected", attribute="client")
    check_real_time(int(cid))
    return int(cid), False


def check_real_time(client: int) -> None:
    """ModelError when the client steps itself (setRealTimeSimulation(1) on a GUI or server connection: PyBullet's
    own thread steps on its clock, between and during the bridge's apply() calls, with none of its torques — the
    chain's joint function measured 0.18 rad off right after an apply()). DIRECT ignores real-time simulation."""
    p = import_pybullet()
    if p.getPhysicsEngineParameters(physicsClientId=client)["useRealTimeSimulation"] \
            and p.getConnectionInfo(physicsClientId=client)["connectionMethod"] != p.DIRECT:
        raise ModelError(f"PyBullet client {client} runs real-time simulation (setRealTimeSimulation(1)): it steps "
                         "on its own clock without the bridge's torques, so no joint function or loop can hold",
                         attribute="client",
                         expected="setRealTimeSimulation(0), then bridge.apply() before every stepSimulation() "
                                  "(or bridge.step())")


def load_body(model, client: int, body_id: int | None) -> int:
    """Load `model.file` (inertia from the file, fixed base per the model) or check the user's `body_id`."""
    p = import_pybullet()
    if body_id is None:
        # PyBullet makes a body whose root link is named "world" static whatever useFixedBase says (its mass
        # matrix then lacks the 6 base rows): a floating base cannot be simulated on it
        if model.floating_base and model.description.root_link == "world":
            raise ModelError("PyBullet fixes a root link named 'world' to the world (URDF convention), so the "
                             "bridge cannot simulate this model with a floating base", file=model.file,
                             element='<link name="world">',
                             expected="another name for the root link, or the reference engine")
        text = checked_text(model)
        try:
            if text is None:   # a description made from text in memory: the file it names
                with native_output(f"pybullet.loadURDF({model.file})"):   # its URDF warnings: logged, not printed
                    return p.loadURDF(os.fspath(model.file), useFixedBase=not model.floating_base,
                                      flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
            # PyBullet reads the text that was checked (the file may have been replaced since load_model read
            # it, or be another format: an OpenSim .osim translated in memory) from a private temporary folder
            with tempfile.TemporaryDirectory(prefix="biobullet-") as folder:
                urdf = os.path.join(folder, "model.urdf")
                with open(urdf, "wb") as handle:
                    handle.write(text)
                with native_output(f"pybullet.loadURDF({model.file})"):
                    return p.loadURDF(urdf, useFixedBase=not model.floating_base,
                                      flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        except p.error as exc:
            raise ModelError(f"PyBullet cannot load the file ({exc})", file=model.file) from None
    body_id = existing_body(client, body_argument(body_id, "body_id"), "body_id")
    check_user_body(model, client, body_id)
    return body_id


def body_argument(body, argument: str) -> int:
    """`body` as a PyBullet body id (int), or one ModelError naming `argument` (a bool, float or text is none)."""
    if isinstance(body, bool) or not isinstance(body, (int, np.integer)):
        raise ModelError(f"argument {argument!r} is {type(body).__name__}", attribute=argument,
                         expected="the int that loadURDF / createMultiBody returned")
    return int(body)


def existing_body(client: int, body: int, argument: str) -> int:
    """`body` if it is a body of `client`, else one ModelError naming `argument`."""
    p = import_pybullet()
    if body not in [p.getBodyUniqueId(i, physicsClientId=client)
                    for i in range(p.getNumBodies(physicsClientId=client))]:
        raise ModelError(f"no body {body} in PyBullet client {client}", attribute=argument)
    return body


def checked_text(model) -> bytes | None:
    """The URDF text PyBullet is to load: what `load_model` read and checked (`ModelDescription.source_text`, or
    the text translated from another format), with every `<mesh filename>` the load found (`find_mesh_file`:
    relative, package:// and file:// names) made absolute — the mesh files the load checked, read from the
    temporary folder as they were from the file's; a text with a line longer than PyBullet reads whole
    (PYBULLET_LINE_BYTES) written one element a line. None for a description without its text (made in memory)."""
    description = model.description
    text = description.source_text if description.translated_urdf is None \
        else description.translated_urdf.encode("utf-8")
    if text is None:
        return None
    from biobullet.model.meshes import find_mesh_file
    from biobullet.model.urdf import parse_xml
    root = parse_xml(model.file, text)
    found = [(mesh, find_mesh_file(model.file, mesh.get("filename", ""))) for mesh in root.iter("mesh")]
    found = [(mesh, os.path.abspath(path)) for mesh, path in found if path is not None]
    axes = non_unit_axes(root)
    long_lines = longest_line(text) > PYBULLET_LINE_BYTES
    if not found and not axes and not long_lines:   # nothing to resolve: the bytes as checked
        return text
    for mesh, path in found:
        mesh.set("filename", path)
    for _, axis, unit in axes:
        axis.set("xyz", " ".join(repr(float(c)) for c in unit))
    if long_lines:   # one element a line (whitespace between elements only: the same URDF)
        ElementTree.indent(root)
    text = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    if longest_line(text) > PYBULLET_LINE_BYTES:   # one tag longer than PyBullet's line: it would be cut inside
        number = next(i for i, line in enumerate(text.split(b"\n"), 1) if len(line) > PYBULLET_LINE_BYTES)
        raise ModelError(f"an element's tag is {longest_line(text)} bytes long (line {number} of the file as the "
                         f"bridge writes it, one element a line); PyBullet reads a URDF in lines of at most "
                         f"{PYBULLET_LINE_BYTES} bytes and cuts longer ones", file=model.file,
                         expected=f"tags shorter than {PYBULLET_LINE_BYTES} bytes, or the reference engine")
    return text


def non_unit_axes(root) -> list[tuple[str, ElementTree.Element, np.ndarray]]:
    """(joint name, `<axis>`, its unit vector) of every joint axis whose xyz is not of unit length. The model (as Pinocchio) takes
    the unit axis; PyBullet's stepSimulation turns the joint about the unit axis but gives the link the angular
    velocity axis·θ̇ (a revolute pendulum with axis "0 2 0" left the engine by 3e-3 rad in 0.2 s at every dt), so
    the bridge hands PyBullet the unit axes. (An axis `load_model` read is finite and not zero.)"""
    axes = []
    for joint in root.iter("joint"):
        for axis in joint.findall("axis"):
            try:
                xyz = np.array(axis.get("xyz", "1 0 0").split(), dtype=float)
            except ValueError:
                continue
            norm = float(np.linalg.norm(xyz)) if xyz.shape == (3,) else 0.0
            if norm > 0.0 and abs(norm - 1.0) > 1e-12:
                axes.append((joint.get("name", "?"), axis, xyz / norm))
    return axes


def longest_line(text: bytes) -> int:
    """Length (bytes, without the newline) of the longest line of `text`."""
    return max(len(line.rstrip(b"\r")) for line in text.split(b"\n"))


def check_user_body(model, client: int, body: int) -> None:
    """ModelError when the user's body is not the robot of the model file in the frame the bridge's dynamics take:
    loaded with the other `useFixedBase` (PyBullet stores a fixed base as mass 0), with `globalScaling` ≠ 1 (it
    scales the link lengths and COMs, not the masses or inertias: another robot, measured on the distance between
    the frames of a revolute, spherical or fixed joint's parent and child links, which no joint angle changes, and
    on every link's stored centre of mass), with `useMaximalCoordinates=True` (no joints), or with a fixed base
    rotated away from the world frame (the bridge's M, h — its own recursions and PyBullet's
    calculateInverseDynamics alike — take the model's gravity in the base frame: measured 5e-4 rad off the coupled
    chain's joint function after every 1/240 s step)."""
    p = import_pybullet()
    fixed = p.getDynamicsInfo(body, -1, physicsClientId=client)[0] == 0.0
    if fixed == bool(model.floating_base):
        raise ModelError(f"PyBullet body {body} was loaded with useFixedBase={fixed}, but the model's base is "
                         f"{'floating' if model.floating_base else 'fixed'}", file=model.file, attribute="body_id",
                         expected=f"loadURDF(..., useFixedBase={not model.floating_base}, "
                                  "flags=URDF_USE_INERTIA_FROM_FILE), or Bridge(model) loading it")
    n_joints = p.getNumJoints(body, physicsClientId=client)
    if n_joints == 0 and model.description.joints:
        # useMaximalCoordinates=True makes each link a free rigid body (the base alone for a fixed base): the body
        # has no joints, and its base name is empty — it read as "no links … (URDF_MERGE_FIXED_LINKS?)"
        raise ModelError(f"PyBullet body {body} has no joints, the model file has {len(model.description.joints)} "
                         "(loaded with useMaximalCoordinates=True?)", file=model.file, attribute="body_id",
                         expected="a body loaded with the default useMaximalCoordinates=False (the bridge's joint "
                                  "torques and states are those of PyBullet's reduced-coordinate multibody)")
    frames_base = p.getBodyInfo(body, physicsClientId=client)[0].decode()
    frames = {frames_base: _base_link_frame(p, client, body)}
    # {link name: PyBullet link index} of the links whose centre of mass enters the dynamics
    links = {frames_base: -1} if model.floating_base else {}
    for joint in range(n_joints):
        links[p.getJointInfo(body, joint, physicsClientId=client)[12].decode()] = joint
        state = p.getLinkState(body, joint, computeForwardKinematics=1, physicsClientId=client)
        frames[p.getJointInfo(body, joint, physicsClientId=client)[12].decode()] = (state[4], state[5])
    missing = [link.name for link in model.description.links if link.name not in frames]
    if missing:
        raise ModelError(f"PyBullet body {body} has no links {', '.join(missing[:5])} of the model file (loaded with "
                         "URDF_MERGE_FIXED_LINKS, or from another file?)", file=model.file, attribute="body_id",
                         expected="a body loaded from the model file without URDF_MERGE_FIXED_LINKS")
    for joint in model.description.joints:
        length = float(np.linalg.norm(joint.origin_xyz))
        # (the frames of a joint that only turns are its origin apart at every joint angle)
        if joint.type not in ("revolute", "continuous", "spherical", "fixed") or length < 1e-6 \
                or joint.parent not in frames or joint.child not in frames:
            continue
        distance = float(np.linalg.norm(np.subtract(frames[joint.child][0], frames[joint.parent][0])))
        if abs(distance - length) > 1e-6 * max(1.0, length):
            raise ModelError(f"PyBullet body {body} is {distance / length:.6g} times the model file's size (the "
                             f"frames of joint {joint.name!r} are {distance:.6g} m apart, the file says "
                             f"{length:.6g} m): loaded with globalScaling?", file=model.file, attribute="body_id",
                             expected="a body loaded without globalScaling (scale the model file instead: "
                                      "PyBullet scales lengths but not masses or inertias)")
    for link in model.description.links:
        # globalScaling scales every link's centre of mass too: on a model whose jointed frames are all at their
        # parent's origin (a pendulum hinged at its base frame) that was the only trace of it (measured: the
        # pendulum of test_bridge_clients at ×2 swung to 0.44 rad in 0.3 s where the engine reaches 0.84)
        if link.inertial is None or link.name not in links:
            continue
        com = np.asarray(link.inertial.com, float)
        stored = np.asarray(p.getDynamicsInfo(body, links[link.name], physicsClientId=client)[3], float)
        size = float(np.linalg.norm(com))
        if float(np.linalg.norm(stored - com)) > 1e-6 * max(1.0, size):
            ratio = f"{float(np.linalg.norm(stored)) / size:.6g} times" if size > 1e-6 else "not"
            raise ModelError(f"PyBullet body {body} has the centre of mass of link {link.name!r} at "
                             f"{tuple(round(float(v), 9) for v in stored)} m, {ratio} the model file's "
                             f"{tuple(round(float(v), 9) for v in com)} m: loaded with globalScaling?",
                             file=model.file, attribute="body_id",
                             expected="a body loaded without globalScaling (scale the model file instead: PyBullet "
                                      "scales lengths but not masses or inertias)")
    if not model.floating_base:
        rotation = np.array(p.getMatrixFromQuaternion(frames[model.description.root_link][1]
                                                      if model.description.root_link in frames
                                                      else _base_link_frame(p, client, body)[1])).reshape(3, 3)
        angle = float(np.arccos(np.clip(0.5 * (np.trace(rotation) - 1.0), -1.0, 1.0)))
        if angle > 1e-9:
            raise ModelError(f"PyBullet body {body} has its fixed base rotated by {angle:.3g} rad from the world "
                             "frame (loadURDF baseOrientation or resetBasePositionAndOrientation): the bridge's "
                             "dynamics take the model's gravity in the base frame", file=model.file,
                             attribute="body_id",
                             expected="a fixed base in the identity orientation (rotate the model file's "
                                      "<gravity> instead)")
    for joint in range(n_joints):   # (`non_unit_axes`: PyBullet keeps the file's axis and turns its links wrongly)
        info = p.getJointInfo(body, joint, physicsClientId=client)
        length = float(np.linalg.norm(info[13]))
        if info[2] in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC) and abs(length - 1.0) > NON_UNIT_AXIS:
            raise ModelError(f"PyBullet body {body} has joint {info[1].decode()!r} with an axis of length "
                             f"{length:.6g}: PyBullet's step gives its link the angular velocity axis·θ̇ while "
                             "the model (as Pinocchio) turns it about the unit axis", file=model.file,
                             attribute="body_id",
                             expected="Bridge(model) loading the file (it hands PyBullet unit axes), or unit "
                                      "<axis xyz> in the file")


def _base_link_frame(p, client: int, body: int):
    """The URDF frame (position, quaternion) of the body's base link (PyBullet reports the base's inertial frame)."""
    position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=client)
    local = p.getDynamicsInfo(body, -1, physicsClientId=client)
    inverse = p.invertTransform(local[3], local[4])
    return p.multiplyTransforms(position, orientation, inverse[0], inverse[1])


def prepare_body(model, client: int, body: int, joint_indices, *, joint_limits: bool,
                 gravity: tuple[float, float, float] | None = None) -> None:
    """Switch off what PyBullet would add to the model: velocity motors, damping, sleeping, (joint limits); set the
    client's gravity to `gravity` (m/s², the bridge's rule: `Bridge._gravity_rule`; None: the model's)."""
    p = import_pybullet()   # banner kept off the terminal (core.native)
    n_links = p.getNumJoints(body, physicsClientId=client)
    types = [p.getJointInfo(body, i, physicsClientId=client)[2:4] for i in range(n_links)]
    movable = [i for i, (kind, q_index) in enumerate(types) if q_index > -1 and kind != p.JOINT_SPHERICAL]
    if movable:
        p.setJointMotorControlArray(body, movable, p.VELOCITY_CONTROL, forces=[0.0] * len(movable),
                                    physicsClientId=client)
    spherical = [i for i, (kind, _) in enumerate(types) if kind == p.JOINT_SPHERICAL]
    disable_spherical_motors(body, spherical, client)
    for link in range(-1, n_links):
        # two calls: PyBullet 3.2.7 ignores jointDamping when activationState is in the same call
        p.changeDynamics(body, link, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0,
                         physicsClientId=client)
        p.changeDynamics(body, link, activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING,
                         maxJointVelocity=MAX_JOINT_VELOCITY, physicsClientId=client)
    if not joint_limits:
        for joint in joint_indices:
            info = p.getJointInfo(body, int(joint), physicsClientId=client)
            if info[8] > info[9]:  # PyBullet made no limit constraint for this joint (e.g. continuous)
                continue
            p.changeDynamics(body, int(joint), jointLowerLimit=-DISABLED_LIMIT, jointUpperLimit=DISABLED_LIMIT,
                             physicsClientId=client)
    p.setGravity(*[float(g) for g in (model.gravity if gravity is None else gravity)], physicsClientId=client)
    if not joint_limits:   # last: the body is fully prepared when this raises
        check_spherical_limits(model, body, spherical, client)


def disable_spherical_motors(body: int, joints: list[int], client: int) -> None:
    """Switch off the motor PyBullet gives every spherical joint: a POSITION_CONTROL motor towards the identity
    that TORQUE_CONTROL does not replace (measured: it turns a free fall of 12 rad/s² into 2·10⁴ rad/s²). As
    PyBullet's documentation says, it is disabled by POSITION_CONTROL with force [0, 0, 0]."""
    p = import_pybullet()   # banner kept off the terminal (core.native)
    if not joints:
        return
    n = len(joints)
    p.setJointMotorControlMultiDofArray(body, joints, p.POSITION_CONTROL, targetPositions=[[0.0, 0.0, 0.0, 1.0]] * n,
                                        targetVelocities=[[0.0, 0.0, 0.0]] * n, positionGains=[0.0] * n,
                                        velocityGains=[1.0] * n, forces=[[0.0, 0.0, 0.0]] * n,
                                        physicsClientId=client)


def check_spherical_limits(model, body: int, joints: list[int], client: int) -> None:
    """ModelError naming a spherical joint whose URDF `<limit>` PyBullet enforces. PyBullet turns such a limit into
    a cone-and-twist constraint (btMultiBodySphericalJointLimit: swing limits lower/upper, `twist`) at load time
    that neither changeDynamics(jointLowerLimit/jointUpperLimit/jointLimitForce) nor any other call removes
    (measured: a joint reset 1.2 rad out of the cone is driven back at 40 rad/s without gravity); the reference
    engine models no such limit, so the bridge would simulate another robot."""
    p = import_pybullet()   # banner kept off the terminal (core.native)
    for joint in joints:
        info = p.getJointInfo(body, joint, physicsClientId=client)
        if info[8] <= info[9]:   # PyBullet made a limit (lower ≤ upper)
            name = info[1].decode()
            raise ModelError(f"PyBullet enforces the <limit> of spherical joint {name!r} (swing {info[8]:g} to "
                             f"{info[9]:g} rad) with a constraint that cannot be switched off after loading, and the "
                             "reference engine models no spherical-joint limit", file=model.file,
                             element=f'<joint name="{name}">', attribute="limit",
                             expected="no <limit> on the spherical joint (or Bridge(..., joint_limits=True) to keep "
                                      "PyBullet's cone limit)")


def loaded_base_pose(initial, q0: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The starting q of a floating body the user loaded (`Bridge(body_id=...)`): q0 with the base pose PyBullet
    holds (x: the tree state read — loadURDF's basePosition / baseOrientation, or a reset since), unless `initial`
    gives it ((q0, v0), or a mapping naming a base coordinate; a file's `<initial>` names joints only). Before, the
    body was moved to the model's default pose (the origin) without a word."""
    from biobullet.model.model import BASE_POSITION_NAMES
    if initial is not None and not (isinstance(initial, Mapping) and not set(initial) & set(BASE_POSITION_NAMES)):
        return q0
    q = np.array(q0, dtype=float)
    q[:7] = x[:7]
    return q
