/*
 * disaggsim: runner for the ns-3 TestSuites compiled into this executable.
 * Usage: disaggsim-ns3-tests [--suite=NAME] [--verbose] (ns3::TestRunner options).
 */
#include "ns3/nstime.h"
#include "ns3/test.h"

int
main (int argc, char** argv)
{
    // Picosecond resolution, as in the driver: serialization times at 40/100/160/400 Gbps are
    // whole picoseconds (topologies/doc/clos.md "Time resolution").
    ns3::Time::SetResolution (ns3::Time::PS);
    return ns3::TestRunner::Run (argc, argv);
}
