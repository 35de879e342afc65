// Test design for nicgen-tb: a two-stage register pipe on a 100-bit bus, a
// combinational 8-bit increment, and a forward-registered AXI-Stream
// passthrough (cuts valid+data, latency 1). Hand-written, lint-clean.
`default_nettype none
module tb_pipe (
    input  wire         clk,
    input  wire         rst,
    input  wire [99:0]  d,
    input  wire [7:0]   a,
    output wire [99:0]  q,
    output wire [7:0]   a_inc,
    output wire [31:0]  count,
    input  wire [31:0]  s_axis_tdata,
    input  wire [3:0]   s_axis_tkeep,
    input  wire         s_axis_tvalid,
    output wire         s_axis_tready,
    input  wire         s_axis_tlast,
    input  wire [2:0]   s_axis_tuser,
    output reg  [31:0]  m_axis_tdata,
    output reg  [3:0]   m_axis_tkeep,
    output reg          m_axis_tvalid,
    input  wire         m_axis_tready,
    output reg          m_axis_tlast,
    output reg  [2:0]   m_axis_tuser
);
    reg [99:0] stage1;
    reg [99:0] stage2;
    reg [31:0] cycles;

    assign q = stage2;
    assign a_inc = a + 8'd1;
    assign count = cycles;
    assign s_axis_tready = !m_axis_tvalid || m_axis_tready;

    always @(posedge clk) begin
        if (rst) begin
            stage1 <= 100'd0;
            stage2 <= 100'd0;
            cycles <= 32'd0;
            m_axis_tvalid <= 1'b0;
            m_axis_tdata <= 32'd0;
            m_axis_tkeep <= 4'd0;
            m_axis_tlast <= 1'b0;
            m_axis_tuser <= 3'd0;
        end else begin
            stage1 <= d;
            stage2 <= stage1;
            cycles <= cycles + 32'd1;
            if (s_axis_tready) begin
                m_axis_tvalid <= s_axis_tvalid;
                m_axis_tdata <= s_axis_tdata;
                m_axis_tkeep <= s_axis_tkeep;
                m_axis_tlast <= s_axis_tlast;
                m_axis_tuser <= s_axis_tuser;
            end
        end
    end
endmodule
`default_nettype wire
