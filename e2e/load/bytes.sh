#!/bin/sh
# make bench-bytes: auto quality's bytes and scores against fixed q80 JPEG
# and WebP on real images from Debian packages (e2e/README.md, Perceptual
# quality): photographs, and portraits, text, screenshots and flat graphics
# from OpenCV's and scikit-image's documentation. Installs the packages
# when missing (root only).
set -eu
cd "$(dirname "$0")/../.."
WIDTH=${WIDTH:-1200}
LEVELS=${LEVELS:-low,medium,high}
O=/usr/share/doc/opencv-doc/examples/data
S=/usr/share/doc/python-skimage-doc/html/_images
if [ ! -d /usr/share/wallpapers/Path ] || [ ! -d /usr/share/backgrounds/mate/nature ] || [ ! -f /usr/share/backgrounds/calla.png ] ||
	[ ! -d $O ] || [ ! -d $S ] || ! command -v butteraugli_main >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		mate-backgrounds plasma-workspace-wallpapers ukui-wallpapers opencv-doc python-skimage-doc libjxl-devtools >/dev/null
fi
W=/usr/share/wallpapers
# 23 photographs (mate-backgrounds' nature set, Plasma's photographs), then
# other content: paintings, illustrations and flat graphics of the
# wallpapers; from OpenCV's examples a person (messi5), an animal portrait
# (baboon), a painting (starry_night), printed text (imageTextN), a photo of
# print (sudoku), a logo, graffiti (graf1) and flat cards; from
# scikit-image's documentation a portrait in a plot with axis labels (the
# astronaut of plot_face_detection) and a screenshot (denoise_viewer_window).
# Those narrower than WIDTH keep their own width.
set -- /usr/share/backgrounds/mate/nature/*.jpg
for p in BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path summer_1am; do
	set -- "$@" "$(ls -S $W/$p/contents/images/*.jpg | head -1)"
done
set -- "$@" "$(ls -S $W/Autumn/contents/images/*.jpg | head -1)" "$(ls -S $W/Patak/contents/images/* | head -1)" \
	/usr/share/backgrounds/calla.png /usr/share/backgrounds/desert.png \
	$O/messi5.jpg $O/baboon.jpg $O/starry_night.jpg $O/imageTextN.png $O/sudoku.png $O/opencv-logo.png $O/graf1.png $O/cards.png \
	$S/sphx_glr_plot_face_detection_001.png $S/denoise_viewer_window.png
nice -n 10 go run ./e2e/load/bytes -width "$WIDTH" -levels "$LEVELS" "$@"
