"""Self-contained HTML replay of a trajectory: one file, no server, no network, opens from file://.

The model's visuals (`render.scene`) are embedded once as triangles in their link frames, and the world placement of
every link at each frame as 12 numbers (R row-major, p; m). A small hand-written canvas renderer (below, ~200
lines of JavaScript: a camera fitted to the whole motion like `frames.fit_camera` — to the convex hull of every
visual over the motion, so no part ever leaves the frame —, perspective projection with near-plane clipping, a
software rasteriser with a depth buffer (correct overlap of interpenetrating segments), flat Lambert shading with a
key light and a headlight, dark materials lifted for contrast, back faces of primitives culled, ground plane with
grid and drop shadows cast along the key light) draws it — no WebGL, so it works the same in headless browsers
without a GPU and needs no third-party JavaScript. A model's muscle paths are drawn over it as lines coloured by
activation (blue 0 → red 1; `export_html(..., muscle_activations=...)`). Controls: play/pause, time slider, drag to
orbit, wheel to zoom.

URL fragment (for scripted screenshots and links to a moment): `OUT.html#t=0.5` shows t = 0.5 s paused;
`&hide=model` draws the scene without the model (ground and grid only — the browser test's blank reference),
`&shadows=0` without the drop shadows (so a test counts the model's own pixels).
"""
from __future__ import annotations

import html as _html
import json
import re
import os

import numpy as np

from biobullet.core.atomic import write_text
from biobullet.core.errors import ModelError

MAX_FRAMES = 1200
FIT_FRAMES = 240   # instants whose visuals the camera fit sees (every frame of a replay up to 8 s at 30 fps)


def nice_spacing(length: float) -> float:
    """A round grid spacing (1, 2 or 5 × 10^k m) near `length`."""
    length = max(float(length), 1e-6)
    exponent = np.floor(np.log10(length))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if factor * 10 ** exponent >= length:
            return float(factor * 10 ** exponent)
    return float(10 ** (exponent + 1))


def spacing_label(spacing: float) -> str:
    return f"{spacing * 100:g} cm" if spacing < 1 else f"{spacing:g} m"


def extreme_points(points: np.ndarray) -> np.ndarray:
    """The vertices of the convex hull of `points` (n×3): every camera fit (the largest of linear functions of the
    points, in any view) is decided by them, so the page fits its camera to the whole motion from a few hundred
    points. Flat or tiny sets are returned whole."""
    from scipy.spatial import ConvexHull, QhullError
    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        return points[np.unique(np.linspace(0, len(points) - 1, min(len(points), 4000)).astype(int))]
    return points[hull.vertices]


def scene_payload(scene, times, states, *, title: str, muscle_activations=None) -> dict:
    """The JSON embedded in the page: visuals, link placements per frame, camera/ground numbers, and the muscle
    paths per frame (world polylines) with their activation colours (`scene.frame_activations`)."""
    from biobullet.render.scene import activation_colors, frame_activations, up_direction
    model = scene.model
    used = sorted({v.link for v in scene.visuals})
    if not used:
        raise ModelError("the model has no visual geometry to draw", file=model.file, element="<visual>")
    index = {name: k for k, name in enumerate(used)}
    poses = np.empty((len(states), len(used), 12))
    for k, x in enumerate(states):
        frames = scene.link_placements(x)
        for name, j in index.items():
            r, p = frames[name]
            poses[k, j, :9], poses[k, j, 9:] = r.ravel(), p
    up = up_direction(model.gravity)
    frames = np.unique(np.linspace(0, len(states) - 1, min(len(states), FIT_FRAMES)).astype(int))
    points = np.vstack([v.vertices @ poses[k, index[v.link], :9].reshape(3, 3).T + poses[k, index[v.link], 9:]
                        for k in frames for v in scene.visuals])
    lower, upper = points.min(axis=0), points.max(axis=0)
    centre = 0.5 * (lower + upper)
    radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.02)
    spacing = nice_spacing(radius / 4)
    fit_points = extreme_points(points)
    muscle_paths, muscle_colors = [], []
    for k, x in enumerate(states):
        polylines = scene.muscle_paths(x)
        muscle_paths.append([np.round(line, 5).ravel().tolist() for line in polylines])
        colors = activation_colors(frame_activations(muscle_activations, k, float(times[k])), len(polylines))
        muscle_colors.append(np.round(255 * colors).astype(int).ravel().tolist())
    return {
        "muscles": muscle_paths, "muscle_colors": muscle_colors,
        "fit": np.round(fit_points, 4).ravel().tolist(),
        "title": title, "times": [round(float(t), 6) for t in times],
        "visuals": [{"l": index[v.link], "v": np.round(v.vertices, 5).ravel().tolist(),
                     "f": np.asarray(v.faces, int).ravel().tolist(),
                     "c": [round(float(c), 3) for c in v.color[:3]],
                     # closed, outward-wound primitives: back faces culled (mesh files may be wound either way)
                     "b": int(v.kind != "mesh")} for v in scene.visuals],
        "links": len(used), "poses": np.round(poses, 5).ravel().tolist(),
        "up": up.round(6).tolist(), "centre": centre.round(5).tolist(), "radius": round(radius, 5),
        "ground": round(float((points @ up).min()), 5), "grid": spacing,
        "grid_label": spacing_label(spacing),
    }


def export_html(model, trajectory, path, *, fps: float = 30.0, title: str | None = None, layouts=None,
                muscle_activations=None) -> str:
    """Write the replay of `trajectory` (a `Trajectory`, or a .csv/.npz path) of `model` to `path` (.html), atomically.

    fps: frames per second of model time embedded (capped so at most 1200 frames are stored). A model with
    `<muscle>`s has its muscle paths drawn, coloured by `muscle_activations` (a scalar, one per muscle, frames ×
    muscles, or a function of time; None = the activations the trajectory recorded, else 0). Returns the path.
    """
    from biobullet.render.scene import Scene, load_trajectory, trajectory_activations, trajectory_states
    from biobullet.render.video import check_fps
    path = os.fspath(path)
    if not path.lower().endswith((".html", ".htm")):
        raise ModelError(f"cannot write {path!r}", attribute="html", expected="a file name ending in .html")
    fps = check_fps(fps)
    if isinstance(trajectory, (str, os.PathLike)):
        trajectory = load_trajectory(trajectory)
    t = np.asarray(trajectory.t, float)
    if len(t) == 0:
        raise ModelError("the trajectory has no samples", attribute="trajectory")
    duration = float(t[-1] - t[0])
    count = int(min(MAX_FRAMES, max(1, np.floor(duration * fps) + 1)))
    times = np.linspace(t[0], t[-1], count) if count > 1 else t[:1]
    states = trajectory_states(model, trajectory, times)
    scene = Scene.from_model(model, layouts=layouts)
    if muscle_activations is None:
        muscle_activations = trajectory_activations(model, trajectory)
    payload = scene_payload(scene, times, states, title=title or model.name, muscle_activations=muscle_activations)
    values = {"__TITLE__": _html.escape(payload["title"]), "__DATA__": json_for_script(payload)}
    # one pass: a title containing "__DATA__" is not searched for markers again
    page = re.sub("__TITLE__|__DATA__", lambda match: values[match.group()], _PAGE)
    write_text(path, page)
    return path


#: characters that are never left raw in JSON embedded in a page: `<` (`</script>`, `<!--` opening the script
#: data state that swallows the page's own script), `>`, `&` (entity and CDATA `]]>` contexts) and the JavaScript
#: line terminators U+2028/U+2029; each becomes its \uXXXX escape, which JSON.parse reads back unchanged
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(data) -> str:
    """`data` as JSON that is inert inside a `<script type="application/json">` element of any HTML page (see
    `_SCRIPT_UNSAFE`); strings keep their exact value for `JSON.parse`."""
    text = json.dumps(data, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda match: _SCRIPT_UNSAFE[match.group()], text)


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__ — biobullet replay</title>
<style>
html,body{margin:0;height:100%;overflow:hidden;background:#fff;font-family:sans-serif}
#view{display:block;width:100%;cursor:grab}
#bar{position:absolute;left:0;right:0;bottom:0;height:40px;display:flex;align-items:center;gap:10px;
padding:0 10px;background:#f2f2f2;border-top:1px solid #ccc;box-sizing:border-box}
#time{flex:1}#label{font:14px monospace;min-width:9em}
</style></head><body>
<canvas id="view"></canvas>
<div id="bar"><button id="play">pause</button><input id="time" type="range" min="0" max="1000" value="0">
<span id="label"></span></div>
<script id="data" type="application/json">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const canvas = document.getElementById("view"), ctx = canvas.getContext("2d");
const slider = document.getElementById("time"), label = document.getElementById("label");
const button = document.getElementById("play");
const T = D.times, NL = D.links, up = D.up;
const args = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
const hideModel = (args.get("hide") || "") === "model", castShadows = args.get("shadows") !== "0";
function dot(a, b) { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2]; }
function cross(a, b) { return [a[1]*b[2]-a[2]*b[1], a[2]*b[0]-a[0]*b[2], a[0]*b[1]-a[1]*b[0]]; }
function norm(a) { const n = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0]/n, a[1]/n, a[2]/n]; }
// two horizontal directions e1, e2 (perpendicular to up)
let e1 = Math.abs(up[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
e1 = norm([e1[0]-up[0]*dot(e1, up), e1[1]-up[1]*dot(e1, up), e1[2]-up[2]*dot(e1, up)]);
const e2 = cross(up, e1);
const cam = {az: -0.9, el: 0.35, zoom: 1.0, fov: 40 * Math.PI / 180};
const light = norm([0.2*e1[0]+0.3*e2[0]+up[0], 0.2*e1[1]+0.3*e2[1]+up[1], 0.2*e1[2]+0.3*e2[2]+up[2]]);   // key light, high: shadows fall near the model
let frame = 0, playing = true, last = null;

function resize() {
  canvas.width = window.innerWidth; canvas.height = Math.max(50, window.innerHeight - 40);
  canvas.style.height = canvas.height + "px";
}
function camera() {
  const c = Math.cos(cam.el), s = Math.sin(cam.el);
  const back = norm([c*(Math.cos(cam.az)*e1[0]+Math.sin(cam.az)*e2[0])+s*up[0],
                     c*(Math.cos(cam.az)*e1[1]+Math.sin(cam.az)*e2[1])+s*up[1],
                     c*(Math.cos(cam.az)*e1[2]+Math.sin(cam.az)*e2[2])+s*up[2]]);
  const aspect = canvas.width / canvas.height;
  const right = norm(cross(up, back)), vup = cross(back, right);
  // fit (as render.frames.fit_camera): the smallest distance keeping every motion point in view, 8 % margin
  const F = D.fit, tv = Math.tan(cam.fov / 2), th = tv * aspect, m = 1.08;
  let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  const proj = [];
  for (let i = 0; i < F.length; i += 3) {
    const p = [F[i], F[i+1], F[i+2]], c = [dot(p, right), dot(p, vup), dot(p, back)];
    proj.push(c);
    for (let k = 0; k < 3; k++) { lo[k] = Math.min(lo[k], c[k]); hi[k] = Math.max(hi[k], c[k]); }
  }
  const mid = [0, 1, 2].map(k => (lo[k] + hi[k]) / 2);
  const needed = () => {
    let need = 1e-3;
    for (const c of proj) need = Math.max(need, Math.abs(c[0]-mid[0])*m/th + c[2]-mid[2], Math.abs(c[1]-mid[1])*m/tv + c[2]-mid[2]);
    return need;
  };
  for (let it = 0; it < 4; it++) {   // centre the perspective image (near points look bigger)
    const D0 = needed();
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const c of proj) {
      const z = mid[2] + D0 - c[2], x = (c[0] - mid[0]) / z, y = (c[1] - mid[1]) / z;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    mid[0] += D0 * (x0 + x1) / 2; mid[1] += D0 * (y0 + y1) / 2;
  }
  const target = [0, 1, 2].map(k => mid[0]*right[k] + mid[1]*vup[k] + mid[2]*back[k]);
  const dist = cam.zoom * needed();
  const eye = [target[0]+dist*back[0], target[1]+dist*back[1], target[2]+dist*back[2]];
  const f = (canvas.height / 2) / Math.tan(cam.fov / 2);
  return {eye, back, right, vup, f, near: dist * 0.02};
}
function project(C, p) {
  const d = [p[0]-C.eye[0], p[1]-C.eye[1], p[2]-C.eye[2]];
  const z = -dot(d, C.back);
  return [canvas.width/2 + C.f*dot(d, C.right)/z, canvas.height/2 - C.f*dot(d, C.vup)/z, z];
}
// drop shadow: along the light direction onto the ground plane
function onGround(p) { const h = (dot(p, up) - D.ground) / dot(light, up); return [p[0]-h*light[0], p[1]-h*light[1], p[2]-h*light[2]]; }
function groundPoint(a, b) {
  const c = D.centre, h = dot(c, up) - D.ground;
  return [c[0]-h*up[0]+a*e1[0]+b*e2[0], c[1]-h*up[1]+a*e1[1]+b*e2[1], c[2]-h*up[2]+a*e1[2]+b*e2[2]];
}
function depth(C, p) { return -((p[0]-C.eye[0])*C.back[0] + (p[1]-C.eye[1])*C.back[1] + (p[2]-C.eye[2])*C.back[2]); }
function mix(p, q, t) { return [p[0]+t*(q[0]-p[0]), p[1]+t*(q[1]-p[1]), p[2]+t*(q[2]-p[2])]; }
// clip a world polygon to the part in front of the near plane (Sutherland–Hodgman, one plane)
function clip(C, poly) {
  const out = [];
  for (let i = 0; i < poly.length; i++) {
    const p = poly[i], q = poly[(i + 1) % poly.length], a = depth(C, p) - C.near, b = depth(C, q) - C.near;
    if (a >= 0) out.push(p);
    if ((a >= 0) !== (b >= 0)) out.push(mix(p, q, a / (a - b)));
  }
  return out;
}
function line(C, p, q) {
  const a = depth(C, p) - C.near, b = depth(C, q) - C.near;
  if (a < 0 && b < 0) return;
  if (a < 0) p = mix(p, q, a / (a - b)); else if (b < 0) q = mix(q, p, b / (b - a));
  const u = project(C, p), v = project(C, q);
  ctx.moveTo(u[0], u[1]); ctx.lineTo(v[0], v[1]);
}
// software rasteriser with a depth buffer: every model pixel is the nearest surface (a painter's sort of whole
// triangles gets long overlapping cylinders wrong); shading is flat per triangle
function fillTriangle(buffer, a, b, c, plot) {
  const W = canvas.width, H = canvas.height;
  const area = (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0]);
  if (!(Math.abs(area) > 1e-9)) return;
  const x0 = Math.max(0, Math.floor(Math.min(a[0], b[0], c[0]))), x1 = Math.min(W-1, Math.ceil(Math.max(a[0], b[0], c[0])));
  const y0 = Math.max(0, Math.floor(Math.min(a[1], b[1], c[1]))), y1 = Math.min(H-1, Math.ceil(Math.max(a[1], b[1], c[1])));
  const eps = -1e-6;
  for (let y = y0; y <= y1; y++) {
    const py = y + 0.5;
    for (let x = x0; x <= x1; x++) {
      const px = x + 0.5;
      const wa = ((b[0]-px)*(c[1]-py) - (b[1]-py)*(c[0]-px)) / area;
      const wb = ((c[0]-px)*(a[1]-py) - (c[1]-py)*(a[0]-px)) / area;
      const wc = 1 - wa - wb;
      if (wa < eps || wb < eps || wc < eps) continue;
      plot(y * W + x, wa*a[2] + wb*b[2] + wc*c[2]);   // a[2] = 1/z: affine in screen space
    }
  }
}
function screen(C, p) { const q = project(C, p); return [q[0], q[1], 1 / q[2]]; }
function draw() {
  const C = camera(), W = canvas.width, H = canvas.height;
  ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, W, H);
  // ground: a square of 8 grid cells a side beyond the model's reach, light fill, grid lines
  const g = D.grid, n = Math.ceil(1.6 * D.radius / g) + 1, L = n * g;
  ctx.beginPath();
  const corners = clip(C, [groundPoint(-L, -L), groundPoint(L, -L), groundPoint(L, L), groundPoint(-L, L)]).map(p => project(C, p));
  if (corners.length > 2) {
    ctx.moveTo(corners[0][0], corners[0][1]);
    for (const c of corners.slice(1)) ctx.lineTo(c[0], c[1]);
    ctx.closePath(); ctx.fillStyle = "#e8eaed"; ctx.fill();
  }
  ctx.beginPath();
  for (let k = -n; k <= n; k++) { line(C, groundPoint(k*g, -L), groundPoint(k*g, L)); line(C, groundPoint(-L, k*g), groundPoint(L, k*g)); }
  ctx.strokeStyle = "#b4b9bf"; ctx.lineWidth = 1; ctx.stroke();
  if (!hideModel) {
    const image = ctx.getImageData(0, 0, W, H), pixels = image.data;
    const shadow = new Uint8Array(W * H), nearest = new Float32Array(W * H);
    const colour = new Uint8Array(W * H * 3);
    const P = D.poses, base = frame * NL * 12;
    const markShadow = i => { shadow[i] = 1; };
    for (const v of D.visuals) {
      const o = base + v.l * 12, V = v.v, Wp = [];
      for (let i = 0; i < V.length; i += 3) {
        const x = V[i], y = V[i+1], z = V[i+2];
        Wp.push([P[o]*x+P[o+1]*y+P[o+2]*z+P[o+9], P[o+3]*x+P[o+4]*y+P[o+5]*z+P[o+10], P[o+6]*x+P[o+7]*y+P[o+8]*z+P[o+11]]);
      }
      const S = Wp.map(p => onGround(p)), Sd = S.map(p => depth(C, p) > C.near), Ss = S.map(p => screen(C, p));
      for (let i = 0; i < v.f.length; i += 3) {
        const a = v.f[i], b = v.f[i+1], c = v.f[i+2];
        if (castShadows && Sd[a] && Sd[b] && Sd[c]) fillTriangle(shadow, Ss[a], Ss[b], Ss[c], markShadow);   // drop shadow
        const u = [Wp[b][0]-Wp[a][0], Wp[b][1]-Wp[a][1], Wp[b][2]-Wp[a][2]], w = [Wp[c][0]-Wp[a][0], Wp[c][1]-Wp[a][1], Wp[c][2]-Wp[a][2]];
        const nrm = norm(cross(u, w));
        if (v.b && dot(nrm, [C.eye[0]-Wp[a][0], C.eye[1]-Wp[a][1], C.eye[2]-Wp[a][2]]) <= 0) continue;   // back face
        const key = v.b ? Math.max(0, dot(nrm, light)) : Math.abs(dot(nrm, light)), head = Math.abs(dot(nrm, C.back));
        // dark materials are lifted a little so a dark link stays readable against the light ground
        const shade = 0.5 + 0.4 * key + 0.3 * head;
        const rgb = v.c.map(k => Math.min(255, Math.round(255 * (0.4 + 0.6 * k) * shade)));
        const poly = clip(C, [Wp[a], Wp[b], Wp[c]]).map(p => screen(C, p));
        const plot = (i, inverseDepth) => {
          if (inverseDepth <= nearest[i]) return;
          nearest[i] = inverseDepth; colour[3*i] = rgb[0]; colour[3*i+1] = rgb[1]; colour[3*i+2] = rgb[2];
        };
        for (let k = 1; k + 1 < poly.length; k++) fillTriangle(nearest, poly[0], poly[k], poly[k+1], plot);
      }
    }
    for (let i = 0; i < W * H; i++) {
      if (nearest[i] > 0) { pixels[4*i] = colour[3*i]; pixels[4*i+1] = colour[3*i+1]; pixels[4*i+2] = colour[3*i+2]; }
      else if (shadow[i]) { pixels[4*i] *= 0.62; pixels[4*i+1] *= 0.62; pixels[4*i+2] *= 0.64; }
    }
    ctx.putImageData(image, 0, 0);
    // muscle paths over the model, coloured by activation (blue 0 → red 1)
    const M = D.muscles[frame], MC = D.muscle_colors[frame];
    ctx.lineWidth = Math.max(2, Math.round(H / 150)); ctx.lineJoin = "round"; ctx.lineCap = "round";
    for (let m = 0; m < M.length; m++) {
      const Q = M[m];
      ctx.beginPath();
      for (let i = 0; i + 5 < Q.length; i += 3) line(C, [Q[i], Q[i+1], Q[i+2]], [Q[i+3], Q[i+4], Q[i+5]]);
      ctx.strokeStyle = "rgb(" + MC[3*m] + "," + MC[3*m+1] + "," + MC[3*m+2] + ")"; ctx.stroke();
    }
  }
  // overlays: name, time, scale cue
  const size = Math.max(12, Math.round(H / 28));
  ctx.font = size + "px sans-serif"; ctx.fillStyle = "#111";
  ctx.fillText(D.title, size * 0.6, size * 1.4);
  ctx.fillText("t = " + T[frame].toFixed(3) + " s", size * 0.6, size * 2.8);
  ctx.fillStyle = "#555"; ctx.fillText("grid " + D.grid_label, size * 0.6, H - size * 0.6);
  label.textContent = "t = " + T[frame].toFixed(3) + " s";
  slider.value = T.length > 1 ? Math.round(1000 * frame / (T.length - 1)) : 0;
}
function frameAt(t) {
  let k = 0;
  while (k + 1 < T.length && Math.abs(T[k+1] - t) <= Math.abs(T[k] - t)) k++;
  return k;
}
function tick(now) {
  if (playing && T.length > 1) {
    if (last !== null) {
      let t = T[frame] + (now - last) / 1000;
      if (t > T[T.length-1]) t = T[0];
      frame = frameAt(t);
    }
    last = now; draw();
  }
  requestAnimationFrame(tick);
}
button.onclick = () => { playing = !playing; last = null; button.textContent = playing ? "pause" : "play"; };
slider.oninput = () => { playing = false; button.textContent = "play"; frame = Math.round(slider.value / 1000 * (T.length - 1)); draw(); };
let drag = null;
canvas.onmousedown = e => { drag = [e.clientX, e.clientY]; };
window.onmouseup = () => { drag = null; };
window.onmousemove = e => {
  if (!drag) return;
  cam.az -= (e.clientX - drag[0]) * 0.01; cam.el = Math.max(-1.4, Math.min(1.4, cam.el + (e.clientY - drag[1]) * 0.01));
  drag = [e.clientX, e.clientY]; draw();
};
canvas.onwheel = e => { e.preventDefault(); cam.zoom *= Math.exp(e.deltaY * 0.001); draw(); };
window.onresize = () => { resize(); draw(); };
resize();
if (args.has("t")) { playing = false; button.textContent = "play"; frame = frameAt(parseFloat(args.get("t"))); }
draw();
requestAnimationFrame(tick);
</script></body></html>
"""
