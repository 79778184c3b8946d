// Reads images imported from an Imbo installation (vitrine import imbo)
// with the official Imbo JavaScript client (npm package `imboclient` 3.x),
// the way the Imbo application that stored them would: each image's
// properties (from X-Imbo-Original* headers), its metadata and its bytes
// under its old identifier, and each short URL's image. Run by
// e2e/imboimport_test.go with NODE_PATH at the installed package. Prints
// "FAIL <what>: <why>" and exits 1 at the first difference, else "PASS".
//
// Environment: IMBO_HOST, IMBO_PUBLIC_KEY, IMBO_PRIVATE_KEY, IMBO_EXPECT
// (a JSON file: {"images": [{user, id, md5, width, height, size, extension,
// mime, metadata}], "shortUrls": [{id, md5}]}).
'use strict';

var fs = require('fs');
var crypto = require('crypto');
var Imbo = require('imboclient');

var expect = JSON.parse(fs.readFileSync(process.env.IMBO_EXPECT, 'utf8'));
var client = new Imbo.Client({
    hosts: process.env.IMBO_HOST,
    user: 'imbo',
    publicKey: process.env.IMBO_PUBLIC_KEY,
    privateKey: process.env.IMBO_PRIVATE_KEY
});

function fail(what, why) {
    console.log('FAIL ' + what + ': ' + why);
    process.exit(1);
}

function sorted(v) {
    if (Array.isArray(v)) {
        return v.map(sorted);
    }
    if (v && typeof v === 'object') {
        var out = {};
        Object.keys(v).sort().forEach(function(k) { out[k] = sorted(v[k]); });
        return out;
    }
    return v;
}

function md5(buf) {
    return crypto.createHash('md5').update(buf).digest('hex');
}

function image(i) {
    if (i >= expect.images.length) {
        return shortUrl(0);
    }
    var want = expect.images[i], what = 'image ' + want.user + '/' + want.id;
    client.user(want.user);
    client.getImageProperties(want.id, function(err, props) {
        if (err) {
            return fail(what + ' properties', err.message || err);
        }
        var w = { width: want.width, height: want.height, filesize: want.size, extension: want.extension, mimetype: want.mime };
        if (JSON.stringify(sorted(props)) !== JSON.stringify(sorted(w))) {
            return fail(what + ' properties', JSON.stringify(props) + ', want ' + JSON.stringify(w));
        }
        client.getMetadata(want.id, function(err, md) {
            if (err) {
                return fail(what + ' metadata', err.message || err);
            }
            if (JSON.stringify(sorted(md || {})) !== JSON.stringify(sorted(want.metadata || {}))) {
                return fail(what + ' metadata', JSON.stringify(md) + ', want ' + JSON.stringify(want.metadata));
            }
            client.getImageData(want.id, function(err, data) {
                if (err) {
                    return fail(what + ' bytes', err.message || err);
                }
                if (md5(data) !== want.md5) {
                    return fail(what + ' bytes', 'MD5 ' + md5(data) + ', want ' + want.md5);
                }
                image(i + 1);
            });
        });
    });
}

function shortUrl(i) {
    if (i >= expect.shortUrls.length) {
        console.log('PASS ' + expect.images.length + ' images, ' + expect.shortUrls.length + ' short URLs');
        return;
    }
    var want = expect.shortUrls[i];
    client.getImageDataFromUrl(process.env.IMBO_HOST + '/s/' + want.id, function(err, data) {
        if (err) {
            return fail('short URL ' + want.id, err.message || err);
        }
        if (md5(data) !== want.md5) {
            return fail('short URL ' + want.id, 'MD5 ' + md5(data) + ', want ' + want.md5);
        }
        shortUrl(i + 1);
    });
}

image(0);
