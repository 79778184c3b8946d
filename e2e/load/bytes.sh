#!/bin/sh
# make bench-bytes: auto quality's bytes and scores against fixed q80 JPEG
# and WebP on real photographs from Debian packages (README, Perceptual
# quality). Installs the wallpaper packages when missing (root only).
set -eu
cd "$(dirname "$0")/../.."
WIDTH=${WIDTH:-1200}
LEVELS=${LEVELS:-low,medium,high}
if [ ! -d /usr/share/wallpapers/Path ] || [ ! -d /usr/share/backgrounds/mate/nature ] || [ ! -f /usr/share/backgrounds/calla.png ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		mate-backgrounds plasma-workspace-wallpapers ukui-wallpapers libjxl-devtools >/dev/null
fi
W=/usr/share/wallpapers
# 21 photographs (mate-backgrounds' nature set, Plasma's photographs), then
# other content: a painting, illustrations and flat graphics.
set -- /usr/share/backgrounds/mate/nature/*.jpg
for p in BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path summer_1am; do
	set -- "$@" "$(ls -S $W/$p/contents/images/*.jpg | head -1)"
done
set -- "$@" "$(ls -S $W/Autumn/contents/images/*.jpg | head -1)" "$(ls -S $W/Patak/contents/images/* | head -1)" \
	/usr/share/backgrounds/calla.png /usr/share/backgrounds/desert.png
go run ./e2e/load/bytes -width "$WIDTH" -levels "$LEVELS" "$@"
