"""Programs dnnlens starts on the user's behalf (benchdnn), kept out of the renderers."""
