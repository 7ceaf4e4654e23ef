"""Trace converters: raw traces of a server cluster -> the per-blade flow table (paper §4.1).

The collector that records such traces on an emulated cluster is the ``testbed`` stage
(``disaggsim.testbed``); nothing here touches the machine.

Modules (each a plain function library; I/O only in the readers and writers):

- ``pcap``: tcpdump captures -> packet table -> network messages
- ``blktrace``: binary blktrace / blkparse text -> block requests
- ``paging``: rmem paging traces (the original artifact's format) -> page accesses
- ``attribution``: which compute blade caused each memory/disk access
- ``blades``: accesses -> flows between compute, memory and disk blades
- ``convert``: a sample directory -> ``disaggsim.schemas.FLOW_TABLE`` (``disaggsim convert``)
- ``paircdf``: per-blade-pair size / inter-arrival CDFs in the artifact's file format
- ``yaps``: YAPS (pHost simulator) flow files <-> ``NS3_FLOWS``
"""
