"""One look for every figure of the study, and one way to save them.

Every mode has one colour and one position wherever it appears, so a reader who learnt that
"docker-proxy is the orange one, fifth from the top" on one figure can rely on it on the
next. ``save`` writes SVG (for the article), PNG at scale 2 (for quick viewing) and the
Vega-Lite spec (so a figure can be re-rendered or restyled without re-running the analysis).
"""

from __future__ import annotations

import json
from pathlib import Path

import altair as alt

THEME = "container_overhead"
# vl-convert ships Liberation Sans, so the PNG/SVG text metrics do not depend on the fonts a
# machine happens to have installed.
FONT = "Liberation Sans"

# Reading order: the reference first, then from the thinnest to the thickest layer.
MODE_ORDER: list[str] = [
    "native",
    "docker-host",
    "docker-bridge",
    # the same bridge, another OCI runtime (pipeline/collect/modes/docker_crun.py, docker_gvisor.py)
    "docker-crun",
    "docker-gvisor",
    "docker-nat",
    "docker-proxy",
    "macvlan",
    "swarm-overlay",
    "swarm-overlay-mtu",
    "swarm-ingress",
    "podman",
    "rootless-docker",
    "rootless-podman",
    "pasta",
    # Kubernetes (pipeline/collect/modes/kubernetes.py)
    "k8s-hostnetwork",
    "k8s-pod",
    "k8s-nodeport",
    "k8s-clusterip",
    # storage modes of the disk benchmarks
    "overlay2",
    "bind-mount",
    "named-volume",
    "rootless-overlay",
    "fuse-overlayfs",
    # the disk benchmark's storage modes (pipeline/collect/modes/storage.py), same colours as above
    "docker-overlay2",
    "docker-bind",
    "docker-volume",
    "rootless-docker-layer",
    "podman-fuse-overlayfs",
]

MODE_COLORS: dict[str, str] = {
    "native": "#222222",
    "docker-host": "#6baed6",
    "docker-bridge": "#2171b5",
    "docker-crun": "#9ecae1",
    "docker-gvisor": "#637939",
    "docker-nat": "#08306b",
    "docker-proxy": "#e6550d",
    "macvlan": "#31a354",
    "swarm-overlay": "#756bb1",
    "swarm-overlay-mtu": "#bcbddc",
    "swarm-ingress": "#54278f",
    "podman": "#8c6d31",
    "rootless-docker": "#d6616b",
    "rootless-podman": "#a50f15",
    "pasta": "#e7ba52",
    "k8s-hostnetwork": "#9edae5",
    "k8s-pod": "#17becf",
    "k8s-nodeport": "#0f7c87",
    "k8s-clusterip": "#084c53",
    "overlay2": "#2171b5",
    "bind-mount": "#6baed6",
    "named-volume": "#31a354",
    "rootless-overlay": "#d6616b",
    "fuse-overlayfs": "#e7ba52",
    "docker-overlay2": "#2171b5",
    "docker-bind": "#6baed6",
    "docker-volume": "#31a354",
    "rootless-docker-layer": "#d6616b",
    "podman-fuse-overlayfs": "#e7ba52",
}

MODE_LABELS: dict[str, str] = {
    "native": "Native",
    "docker-host": "Docker host network",
    "docker-bridge": "Docker bridge",
    "docker-crun": "Docker bridge, crun runtime",
    "docker-gvisor": "Docker bridge, gVisor (runsc)",
    "docker-nat": "Docker published port (NAT)",
    "docker-proxy": "Docker proxy (localhost)",
    "macvlan": "Docker macvlan",
    "swarm-overlay": "Swarm overlay",
    "swarm-overlay-mtu": "Swarm overlay (MTU tuned)",
    "swarm-ingress": "Swarm ingress (routing mesh)",
    "podman": "Podman (rootful)",
    "rootless-docker": "Rootless Docker",
    "rootless-podman": "Rootless Podman",
    "pasta": "Rootless Podman (pasta)",
    "k8s-hostnetwork": "Kubernetes pod, host network",
    "k8s-pod": "Kubernetes pod",
    "k8s-nodeport": "Kubernetes NodePort Service",
    "k8s-clusterip": "Kubernetes ClusterIP Service (client pod)",
    "overlay2": "Container filesystem (overlay2)",
    "bind-mount": "Bind mount",
    "named-volume": "Named volume",
    "rootless-overlay": "Rootless overlay",
    "fuse-overlayfs": "fuse-overlayfs",
    "docker-overlay2": "Docker container layer (overlay2)",
    "docker-bind": "Docker bind mount",
    "docker-volume": "Docker named volume",
    "rootless-docker-layer": "Rootless Docker container layer",
    "podman-fuse-overlayfs": "Podman fuse-overlayfs",
}

UNKNOWN_COLOR = "#969696"


def mode_rank(mode: str) -> int:
    """Position of ``mode`` in the project's order; unknown modes go last."""
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def mode_scale(modes) -> alt.Scale:
    """Colour scale for the ``modes`` present, in project order, with the project's colours."""
    domain = sorted(dict.fromkeys(modes), key=lambda m: (mode_rank(m), m))
    return alt.Scale(domain=domain, range=[MODE_COLORS.get(m, UNKNOWN_COLOR) for m in domain])


def theme() -> alt.theme.ThemeConfig:
    """The project theme: readable sizes on paper and on screen, no chart junk."""
    return {
        "config": {
            "font": FONT,
            "background": "white",
            "view": {"stroke": None, "continuousWidth": 360, "continuousHeight": 240},
            "title": {"fontSize": 15, "fontWeight": "bold", "anchor": "start", "offset": 10},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "titleFontWeight": "normal",
                "gridColor": "#e6e6e6",
                "domainColor": "#888888",
                "tickColor": "#888888",
                "labelLimit": 320,
            },
            "header": {"labelFontSize": 13, "titleFontSize": 13},
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "labelLimit": 320},
            "text": {"fontSize": 12},
            "point": {"size": 70, "filled": True, "opacity": 1},
        }
    }


# Importing the module is enough for charts displayed in a notebook to use the theme.
alt.theme.register(THEME, enable=True)(theme)


def use_theme() -> None:
    """Enable the project theme (idempotent); ``save`` does it for you."""
    alt.theme.enable(THEME)


def save(
    chart: alt.TopLevelMixin, out_dir: Path | str, stem: str, caption: str | None = None
) -> list[Path]:
    """Write ``<stem>.svg``, ``<stem>.png`` (scale 2) and ``<stem>.vl.json`` into ``out_dir``.

    With ``caption``, also ``<stem>.caption.md``, so the article takes the caption from the same
    stage that drew the figure. Returns the paths written.
    """
    import vl_convert as vlc

    use_theme()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = chart.to_dict()
    paths = [out / f"{stem}.svg", out / f"{stem}.png", out / f"{stem}.vl.json"]
    # One compilation to Vega, and the PNG rasterised from the SVG: the same files as
    # vegalite_to_svg and vegalite_to_png give (each compiles and renders on its own), in half
    # the time.
    svg = vlc.vega_to_svg(vlc.vegalite_to_vega(spec))
    paths[0].write_text(svg, encoding="utf-8")
    paths[1].write_bytes(vlc.svg_to_png(svg, scale=2))
    paths[2].write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if caption is not None:
        paths.append(out / f"{stem}.caption.md")
        paths[-1].write_text(caption.strip() + "\n", encoding="utf-8")
    return paths
