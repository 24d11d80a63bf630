{
  "targets": [
    {
      "target_name": "pdb_scan",
      "sources": [
        "walk.c",
        "snapshot.c",
        "chunks.c",
        "os.c",
        "watch.c",
        "addon.c"
      ],
      "defines": [
        "NAPI_VERSION=8"
      ],
      "cflags": [
        "-O2",
        "-ffp-contract=off",
        "-Wall",
        "-Wno-unused-parameter"
      ],
      "xcode_settings": {
        "OTHER_CFLAGS": [
          "-O2",
          "-ffp-contract=off"
        ]
      },
      "libraries": [
        "-lpthread"
      ]
    },
    {
      "target_name": "pdb-env-client",
      "type": "executable",
      "sources": [
        "client.c"
      ],
      "cflags": [
        "-O2",
        "-Wall"
      ],
      "xcode_settings": {
        "OTHER_CFLAGS": [
          "-O2"
        ]
      }
    }
  ]
}
