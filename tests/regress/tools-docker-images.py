#!/usr/bin/env python3
# list_docker_images against the real Docker Engine: tags, untagged image
# ids, sorted without duplicates, every string usable as an image name.

import io
import subprocess
import tarfile

from lib import IMAGE, Server, check, check_eq, check_in, cleanup, docker, \
    main, ok_result


def import_untagged():
    """Import a one-file image with no tag; return its id."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        data = b"untagged test image\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    r = subprocess.run(["docker", "import", "-"], input=buf.getvalue(),
                       capture_output=True, check=True)
    return r.stdout.decode().strip()


def test():
    image_id = import_untagged()
    cleanup(lambda: docker("rmi", "-f", image_id, check_rc=False))
    docker("tag", IMAGE, "sandbox-mcp/regress:second")
    cleanup(lambda: docker("rmi", "sandbox-mcp/regress:second",
                           check_rc=False))

    s = Server()
    s.initialize()
    images = ok_result(s.call("list_docker_images", {}),
                       "list_docker_images")["images"]
    check_in(IMAGE, images, "the test image")
    check_in("sandbox-mcp/regress:second", images, "a second tag")
    check_in(image_id, images, "the untagged image's id")
    check_eq(images, sorted(set(images)), "sorted and unique")
    check("<none>:<none>" not in images, "no <none>:<none>")
    # Every entry names an image the Engine knows.
    for ref in images:
        check(docker("image", "inspect", "--format", "{{.Id}}", ref,
                     check_rc=False) != "", "inspect " + ref)
    # Matches docker's own view of the tagged images.
    want = set(docker("images", "--format",
                      "{{.Repository}}:{{.Tag}}").split())
    want.discard("<none>:<none>")
    check(want <= set(images), "every docker images tag listed: missing %r"
          % (want - set(images)))


main(test)
