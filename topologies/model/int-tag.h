/*
 * disaggsim: in-band network telemetry (INT) records that switch egress ports stamp on a
 * frame that asks for them (FabricHeader::intRequested), for HPCC (Li et al. SIGCOMM'19 §3.2).
 */
#ifndef DISAGGSIM_INT_TAG_H
#define DISAGGSIM_INT_TAG_H

#include "ns3/tag.h"

#include <array>
#include <cstdint>

namespace ns3
{

/// Hops an INT header holds (HPCC's simulator IntHeader::maxHop = 5; a Clos path has 3).
constexpr uint32_t kIntMaxHops = 5;

/**
 * Wire bytes of the INT header a frame that asks for telemetry carries, whatever the number
 * of hops stamped: a 2 B hop count and kIntMaxHops records of 8 B (HPCC's simulator,
 * simulation/src/network/utils/int-header.{h,cc}: IntHeader::GetStaticSize = sizeof hop[5]
 * + sizeof nhop = 42 B, fixed so that a switch never grows a frame).  The transport counts
 * them in its packet size; the records themselves travel out of band in an IntTag.
 */
constexpr uint32_t kIntHeaderBytes = 2 + 8 * kIntMaxHops;

/**
 * \brief One hop's INT record, stamped when the frame starts transmission at a switch egress
 * port (HPCC SIGCOMM'19 §3.2, Figure 5: qLen, txBytes, ts, B).
 *
 * Full precision here; HPCC's 8 B wire record quantizes them (bytes in 128 B units, queue in
 * 80 B units, 24-bit ns time), which only the wire size above models.
 */
struct IntHop
{
    uint64_t timeNs{0};    ///< ts: when the frame started transmission at the port
    uint64_t txBytes{0};   ///< txBytes: wire bytes the port sent before this frame
    uint32_t qlenBytes{0}; ///< qLen: wire bytes waiting in the port's egress queue
    uint64_t rateBps{0};   ///< B: the port's line rate in bit/s
};

/**
 * \brief The INT records of one frame: appended hop by hop at switch egress
 * (FabricNetDevice, for frames with FabricHeader::intRequested set), read by the receiver
 * and echoed to the sender in its ACK.
 */
class IntTag : public Tag
{
  public:
    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (TagBuffer buffer) const override;
    void Deserialize (TagBuffer buffer) override;
    void Print (std::ostream& os) const override;

    /// Append \p hop; a frame past kIntMaxHops hops keeps its first kIntMaxHops records.
    void PushHop (const IntHop& hop);

    uint32_t GetNHops () const
    {
        return m_nHops;
    }

    const IntHop& GetHop (uint32_t i) const
    {
        return m_hops[i];
    }

  private:
    uint32_t m_nHops{0};
    std::array<IntHop, kIntMaxHops> m_hops{};
};

} // namespace ns3

#endif // DISAGGSIM_INT_TAG_H
